package ranktable

import "fmt"

// FieldError reports a field of the table that is wrong: malformed, of the
// wrong JSON type, or breaking the contract.
type FieldError struct {
	// Path locates the field in the document, e.g.
	// "server_list[1].device[0].rank_id"; "" is the document itself.
	Path string
	// Value is the field's value as found, "" when it is missing or not a
	// string.
	Value string
	// Msg says what is wrong, usually quoting Value.
	Msg string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return "ranktable: " + e.Msg
	}
	return e.Path + ": " + e.Msg
}

// fieldErr builds the usual FieldError: the quoted value (cut to
// maxQuoted bytes) and why it is wrong.
func fieldErr(path, value, why string) *FieldError {
	q := fmt.Sprintf("%q", cut(value))
	if len(value) > maxQuoted {
		q = fmt.Sprintf("%s (%d bytes)", q, len(value))
	}
	return &FieldError{Path: path, Value: value, Msg: q + " " + why}
}

func serverPath(i int) string    { return fmt.Sprintf("server_list[%d]", i) }
func devicePath(i, j int) string { return fmt.Sprintf("server_list[%d].device[%d]", i, j) }
func joinPath(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	}
	return path + "." + field
}
