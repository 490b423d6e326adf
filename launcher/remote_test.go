package launcher

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/launcher/placement"
)

// TestTwoNamesOfThisMachine: a placement that lists this machine under two
// names is a usage error naming both, found before any host is dialled
// (the rank table refused it later, as an internal-looking duplicate
// server_id and exit 1).
func TestTwoNamesOfThisMachine(t *testing.T) {
	p, err := placement.Map([]placement.Host{{Name: "localhost", Slots: 2}, {Name: "127.0.0.2", Slots: 2}}, placement.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = connectHosts(context.Background(), p, Remote{}, slog.New(slog.DiscardHandler))
	if !errors.Is(err, ErrUsage) || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "hosts localhost and 127.0.0.2 are both this machine") {
		t.Fatalf("connectHosts: %v (exit %d), want a usage error naming both", err, ExitCode(err))
	}
	err = (&Job{Program: "/bin/true", Placement: p}).Run(context.Background())
	if ExitCode(err) != ExitUsage {
		t.Fatalf("Run: %v (exit %d), want exit 2", err, ExitCode(err))
	}
}
