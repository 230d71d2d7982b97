package hookinbox

import (
	"fmt"
	"reflect"
	"strings"
)

// RowOf is the projection row of a struct (or a pointer to one): each
// exported field with a `db:"column"` tag is that column's value, a field
// tagged `db:"-"` or untagged is left out, and an embedded struct's fields
// are its own. A nil pointer field is NULL (a WriteFenced with a nil
// version keeps the stored one). It is the typed way to build a Row:
//
//	type issueRow struct {
//		Repo      string    `db:"repo"`
//		Number    int64     `db:"number"`
//		State     string    `db:"state"`
//		UpdatedAt time.Time `db:"updated_at"` // the VersionColumn
//		EventSeq  int64     `db:"event_seq"`  // the TieColumn: ev.Seq
//	}
//	row, err := hookinbox.RowOf(issueRow{…})
func RowOf(v any) (Row, error) {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, fmt.Errorf("RowOf: a nil %s", rv.Type())
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil, fmt.Errorf("RowOf: a %s is not a struct", rv.Type())
	}
	row := Row{}
	if err := addFields(row, rv); err != nil {
		return nil, err
	}
	if len(row) == 0 {
		return nil, fmt.Errorf("RowOf: %s has no field tagged db", rv.Type())
	}
	return row, nil
}

func addFields(row Row, rv reflect.Value) error {
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag, tagged := f.Tag.Lookup("db")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && !tagged && f.Type.Kind() == reflect.Struct {
			if err := addFields(row, rv.Field(i)); err != nil {
				return err
			}
			continue
		}
		if !f.IsExported() || !tagged || name == "-" || name == "" {
			continue
		}
		if _, dup := row[name]; dup {
			return fmt.Errorf("RowOf: two fields of %s are column %s", rt, name)
		}
		fv := rv.Field(i)
		if fv.Kind() == reflect.Pointer && fv.IsNil() {
			row[name] = nil
			continue
		}
		row[name] = fv.Interface()
	}
	return nil
}
