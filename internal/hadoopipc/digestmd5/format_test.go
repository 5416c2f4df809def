package digestmd5

// formatDirectives is the inverse of parseDirectives (used by tests and the
// fuzz round trip): bare values that would not survive re-parsing are quoted.
func formatDirectives(ds []directive) []byte {
	var dst []byte
	for i, d := range ds {
		if i > 0 {
			dst = append(dst, ',')
		}
		if d.quoted || !bareOK(d.value) {
			dst = appendQuoted(dst, d.name, d.value)
		} else {
			dst = appendBare(dst, d.name, d.value)
		}
	}
	return dst
}

func bareOK(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isBareValueChar(v[i]) {
			return false
		}
	}
	return true
}
