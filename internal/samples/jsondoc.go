package samples

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// doc is a JSON object that keeps its keys in order, so a payload is sent
// as its template has it with only the fields set here changed. Values are
// *object, []any, string, json.Number, bool or nil.
type doc struct{ root *object }

type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// put sets k, at the end when new.
func (o *object) put(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// putAfter sets k; when new, it goes right after key after (at the end when
// after is absent).
func (o *object) putAfter(k string, v any, after string) {
	if _, ok := o.vals[k]; ok {
		o.vals[k] = v
		return
	}
	o.vals[k] = v
	for i, key := range o.keys {
		if key == after {
			o.keys = append(o.keys[:i+1], append([]string{k}, o.keys[i+1:]...)...)
			return
		}
	}
	o.keys = append(o.keys, k)
}

// putFront sets k, first when new.
func (o *object) putFront(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append([]string{k}, o.keys...)
	}
	o.vals[k] = v
}

func (o *object) remove(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, key := range o.keys {
		if key == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			return
		}
	}
}

// parseDoc reads a JSON object.
func parseDoc(b []byte) (*doc, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not one JSON value: something follows it")
	}
	o, ok := v.(*object)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return &doc{root: o}, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newObject()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.put(k, v)
			}
			_, err := dec.Token() // }
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ]
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// compact is the document as compact JSON, keys in order, without the
// HTML escaping encoding/json adds (providers send <, > and & as they are).
func (d *doc) compact() []byte {
	var b bytes.Buffer
	writeValue(&b, d.root)
	return b.Bytes()
}

// indented is the document indented with two spaces (as Stripe sends).
func (d *doc) indented() []byte {
	var b bytes.Buffer
	_ = json.Indent(&b, d.compact(), "", "  ") // compact() is valid JSON
	return b.Bytes()
}

func writeValue(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range t.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeValue(b, t.vals[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeValue(b, e)
		}
		b.WriteByte(']')
	case string:
		writeString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case int:
		b.WriteString(strconv.Itoa(t))
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	default:
		panic(fmt.Sprintf("samples: cannot write a %T", v))
	}
}

func writeString(b *bytes.Buffer, s string) {
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(sb.Bytes(), []byte("\n")))
}

// splitPath splits a dotted path (data.object.id, commits.0.id) into its
// keys; "\." is a dot inside a key, as in gjson. Paths using gjson's
// queries, wildcards or modifiers cannot name one field to write.
func splitPath(path string) ([]string, error) {
	if path == "" || strings.ContainsAny(path, "*?#@|!") {
		return nil, fmt.Errorf("cannot write at path %q: only plain dotted paths (data.project_id) can be written", path)
	}
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '\\' && i+1 < len(path):
			i++
			cur.WriteByte(path[i])
		case c == '.':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("cannot write at path %q: it has an empty key", path)
		}
	}
	return parts, nil
}

// child is the value under key in v (an object's field, an array's index).
func child(v any, key string) (any, bool) {
	switch t := v.(type) {
	case *object:
		return t.get(key)
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(t) {
			return nil, false
		}
		return t[i], true
	}
	return nil, false
}

// get is the value at path.
func (d *doc) get(path string) (any, bool) {
	parts, err := splitPath(path)
	if err != nil {
		return nil, false
	}
	var v any = d.root
	for _, p := range parts {
		var ok bool
		if v, ok = child(v, p); !ok {
			return nil, false
		}
	}
	return v, true
}

// has reports whether path exists.
func (d *doc) has(path string) bool {
	_, ok := d.get(path)
	return ok
}

// str is the string at path ("" when there is none).
func (d *doc) str(path string) string {
	v, _ := d.get(path)
	s, _ := v.(string)
	return s
}

// set writes v at path, creating the objects on the way that are missing.
func (d *doc) set(path string, v any) error {
	parts, err := splitPath(path)
	if err != nil {
		return err
	}
	var cur any = d.root
	for i, p := range parts {
		last := i == len(parts)-1
		switch t := cur.(type) {
		case *object:
			if last {
				t.put(p, v)
				return nil
			}
			next, ok := t.get(p)
			if !ok || next == nil {
				next = newObject()
				t.put(p, next)
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(t) {
				return fmt.Errorf("cannot write at path %q: %s is not an index of its array", path, p)
			}
			if last {
				t[n] = v
				return nil
			}
			cur = t[n]
		default:
			return fmt.Errorf("cannot write at path %q: %s is inside a %s, not an object", path, p, kind(cur))
		}
	}
	return nil
}

// update writes v at path only where path exists (a payload of the
// caller's own keeps its shape).
func (d *doc) update(path string, v any) {
	if d.has(path) {
		_ = d.set(path, v) // it exists, so every step on the way does
	}
}

// del removes the field at path, if any.
func (d *doc) del(path string) {
	parts, err := splitPath(path)
	if err != nil {
		return
	}
	parent := any(d.root)
	if len(parts) > 1 {
		var ok bool
		if parent, ok = d.get(strings.Join(parts[:len(parts)-1], ".")); !ok {
			return
		}
	}
	if o, ok := parent.(*object); ok {
		o.remove(parts[len(parts)-1])
	}
}

// replace puts new in place of old everywhere in the document: number
// values equal to old, and old inside any string (an id, and the URLs that
// name it). Only for values too long to occur by chance (a commit SHA, a
// 9-digit id).
func (d *doc) replace(old, new string) {
	d.root = replaceIn(d.root, old, new).(*object)
}

func replaceIn(v any, old, new string) any {
	switch t := v.(type) {
	case *object:
		for _, k := range t.keys {
			t.vals[k] = replaceIn(t.vals[k], old, new)
		}
	case []any:
		for i := range t {
			t[i] = replaceIn(t[i], old, new)
		}
	case string:
		return strings.ReplaceAll(t, old, new)
	case json.Number:
		if string(t) == old {
			return json.Number(new)
		}
	}
	return v
}

func kind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number, int, int64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "value"
}
