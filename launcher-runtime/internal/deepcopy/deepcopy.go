package deepcopy

import "reflect"

// Of returns a deep copy of *src. Unexported struct fields are copied
// shallowly; libvirtxml has none.
func Of[T any](src *T) *T {
	if src == nil {
		return nil
	}
	dst := new(T)
	copyValue(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem())
	return dst
}

func copyValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Struct:
		dst.Set(src)
		for i := 0; i < src.NumField(); i++ {
			if dst.Field(i).CanSet() && needsDeepCopy(src.Field(i).Kind()) {
				copyValue(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		if needsDeepCopy(src.Type().Elem().Kind()) {
			for i := 0; i < src.Len(); i++ {
				copyValue(s.Index(i), src.Index(i))
			}
		} else {
			reflect.Copy(s, src)
		}
		dst.Set(s)
	case reflect.Array:
		for i := 0; i < src.Len(); i++ {
			copyValue(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			copyValue(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		v := reflect.New(src.Elem().Type()).Elem()
		copyValue(v, src.Elem())
		dst.Set(v)
	default:
		dst.Set(src)
	}
}

// needsDeepCopy reports whether a value of this kind may share memory with
// its source after a plain assignment.
func needsDeepCopy(k reflect.Kind) bool {
	switch k {
	case reflect.Pointer, reflect.Struct, reflect.Slice, reflect.Array, reflect.Map, reflect.Interface:
		return true
	}
	return false
}
