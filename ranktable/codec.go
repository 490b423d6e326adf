package ranktable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
)

// The wire shapes Parse decodes in stages: each level keeps its children raw
// so that a type error can be reported with the index of the element it is
// in (encoding/json names the field but not the array index).
type (
	wireTable struct {
		Status      string            `json:"status"`
		Version     string            `json:"version"`
		ServerCount string            `json:"server_count"`
		ServerList  []json.RawMessage `json:"server_list"`
		JobID       string            `json:"job_id"`
		ControlAddr string            `json:"control_addr"`
		HandoffNS   string            `json:"handoff_ns"`
	}
	wireServer struct {
		ServerID string            `json:"server_id"`
		HostAddr string            `json:"host_addr"`
		Devices  []json.RawMessage `json:"device"`
	}
)

// Parse decodes a rank table. It fails on malformed JSON (the error gives
// the byte offset) and on a value of the wrong JSON type (a *FieldError with
// the field's path); unknown fields are ignored. Parse does not check the
// contract: call Validate.
func Parse(data []byte) (*Table, error) {
	var w wireTable
	if err := decode(data, &w, ""); err != nil {
		return nil, err
	}
	t := &Table{
		Status:      w.Status,
		Version:     w.Version,
		ServerCount: w.ServerCount,
		JobID:       w.JobID,
		ControlAddr: w.ControlAddr,
		HandoffNS:   w.HandoffNS,
	}
	if w.ServerList != nil {
		t.ServerList = make([]Server, len(w.ServerList))
	}
	for i, raw := range w.ServerList {
		var ws wireServer
		if err := decode(raw, &ws, serverPath(i)); err != nil {
			return nil, err
		}
		s := &t.ServerList[i]
		s.ServerID, s.HostAddr = ws.ServerID, ws.HostAddr
		if ws.Devices != nil {
			s.Devices = make([]Device, len(ws.Devices))
		}
		for j, raw := range ws.Devices {
			if err := decode(raw, &s.Devices[j], devicePath(i, j)); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// decode unmarshals one level and turns encoding/json's errors into ours.
func decode(data []byte, v any, path string) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("ranktable: malformed JSON at offset %d: %w", se.Offset, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &FieldError{
			Path: joinPath(path, te.Field),
			Msg:  fmt.Sprintf("is a JSON %s, want %s", te.Value, jsonKind(te.Type)),
		}
	}
	return fmt.Errorf("ranktable: %w", err)
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return t.String()
}

// Marshal encodes the table as indented JSON with a trailing newline. It does
// not validate: WriteFile does.
func (t *Table) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<" and "&" readable; this is a file, not HTML
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return nil, fmt.Errorf("ranktable: %w", err)
	}
	return b.Bytes(), nil
}

// ReadFile reads, parses and validates the rank table at path, refusing a
// file of more than MaxFileBytes before reading it. Errors are prefixed
// with the path.
func ReadFile(path string) (*Table, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data)
	if err == nil {
		err = t.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// readBounded reads at most MaxFileBytes of path: a regular file that is
// larger is refused from its size, anything else (a pipe, /dev/zero) when
// it yields more.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ranktable: %w", err)
	}
	defer f.Close()
	tooBig := func(size string) error {
		return fmt.Errorf("ranktable: %s: %smore than the %d MiB a rank table may have", path, size, MaxFileBytes>>20)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileBytes {
		return nil, tooBig(fmt.Sprintf("%d bytes, ", fi.Size()))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ranktable: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, tooBig("")
	}
	return data, nil
}

// WriteFile validates t and writes it to path with mode 0600 (it is only for
// the job's own processes). The write is atomic: the table goes to a
// temporary file in the same directory, is synced, and is renamed over path,
// so a rank never reads half a table.
func WriteFile(path string, t *Table) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("ranktable: refusing to write an invalid table: %w", err)
	}
	data, err := t.Marshal()
	if err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("ranktable: %w", err)
	}
	tmp := f.Name()
	err = writeSynced(f, data)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("ranktable: %w", err)
	}
	return nil
}

// writeSynced writes data to f, makes sure of the mode (CreateTemp already
// uses 0600, but that is its implementation, not its promise), syncs and
// closes.
func writeSynced(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
