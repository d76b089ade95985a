// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The bounds of a GuestDefinition answer (a plugin sidecar's, or the legacy
// hook sidecars'), checked before it is decoded.
const (
	// maxAnswerDepth bounds the nesting of elements, the root counting as
	// one. The deepest element of the domains in the fixtures is at depth
	// 5 (a disk's backingStore format); 256 leaves room for a backing chain
	// of some 250 images and for deep <metadata>.
	maxAnswerDepth = 256
	// maxAnswerTokens bounds the elements and attributes of an answer, and
	// with them what decoding it costs: libvirtxml allocates up to about
	// 2.8 KiB for one element (an empty <disk/>), so an answer within the
	// bound decodes in at most some 90 MiB of allocations whatever its
	// size. The domains of the fixtures have fewer than 400; a VM with 256
	// disks, 256 interfaces and 512 pinned vCPUs some 14,000.
	maxAnswerTokens = 32768
)

// domainIdentity is what a GuestDefinition answer must keep of the domain
// it was sent: its name and its UUID, as the decoder reads them.
type domainIdentity struct {
	name, uuid string
}

// checkAnswer checks a GuestDefinition answer whose outline was checked
// (checkDomainOutline): within the bounds above, exactly one root element
// with nothing but white space after it, and the name and UUID of sent.
//
// It reads the answer in one pass over its bytes that allocates nothing
// (but for a name or UUID written with references) and stops at the first
// rule broken, so that an answer over the bounds costs little however
// large it is. The pass follows XML's lexical structure as the decoder's
// tokenizer (encoding/xml) does: start and end tags with their quoted
// attribute values, comments, CDATA sections, processing instructions and
// declarations. An answer that is not well-formed may pass it; the
// decoding refuses it later, as the failure of the hook that sent it.
func checkAnswer(data []byte, sent domainIdentity) error {
	var (
		depth, tokens, roots int
		root                 []byte
		field                string // "name" or "uuid" while in one, at depth 2
		fieldOpen, fieldText int    // where its start tag and its content start
		seenName, seenUUID   bool
	)
	keep := func(element string, value, content []byte) error {
		want := sent.name
		if element == "name" {
			seenName = true
		} else {
			seenUUID, want = true, sent.uuid
		}
		text, same, err := elementText(value, content, want)
		if err != nil {
			return err
		}
		if !same {
			return identityChanged(element, want, text)
		}
		return nil
	}
	afterRoot := func() error {
		return fmt.Errorf("domain XML with content after the <%s> element: an answer is exactly one <domain> element", root)
	}
	text := 0 // where the character data after the last markup starts
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '<')
		if j < 0 {
			j = len(data) - i
		}
		if depth == 0 && roots > 0 && len(bytes.Trim(data[text:i+j], " \t\r\n")) > 0 {
			return afterRoot()
		}
		i += j
		if i >= len(data) {
			break
		}
		rest := data[i:]
		end := 0 // the length of the markup at i; 0 when it does not end
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			end = markupEnd(rest, 4, "-->")
		case bytes.HasPrefix(rest, []byte("<?")):
			end = markupEnd(rest, 2, "?>")
		case depth == 0 && roots > 0 && len(rest) > 1 && (rest[1] == '!' || rest[1] == '/'):
			// Comments, processing instructions, white space and (refused
			// below) another element are what may follow the root.
			return afterRoot()
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			end = markupEnd(rest, 9, "]]>")
		case bytes.HasPrefix(rest, []byte("<!")):
			end = declarationEnd(rest)
		case bytes.HasPrefix(rest, []byte("</")):
			end = markupEnd(rest, 2, ">")
			if depth == 2 && field != "" && end > 0 {
				if err := keep(field, data[fieldOpen:i+end], data[fieldText:i]); err != nil {
					return err
				}
				field = ""
			}
			depth--
		default:
			// A start tag: count it and its attributes (one '=' each
			// outside quoted values) up to its '>'.
			tokens++
			var quote byte
			k := 1
		tag:
			for ; k < len(rest); k++ {
				switch c := rest[k]; {
				case quote != 0:
					if c == quote {
						quote = 0
					}
				case c == '"' || c == '\'':
					quote = c
				case c == '=':
					tokens++
				case c == '>':
					break tag
				}
			}
			if tokens > maxAnswerTokens {
				return errAnswerTooLarge
			}
			if k == len(rest) {
				break // does not end
			}
			end = k + 1
			name := rest[1:k]
			if n := bytes.IndexAny(name, " \t\r\n/"); n >= 0 {
				name = name[:n]
			}
			local := name[bytes.IndexByte(name, ':')+1:]
			if depth == 0 {
				roots++
				if roots > 1 {
					return fmt.Errorf("domain XML with a second root element <%s> after the <%s> element: an answer is exactly one <domain> element", local, root)
				}
				root = local
			}
			var isField string
			if depth == 1 {
				switch string(local) {
				case "name":
					isField = "name"
				case "uuid":
					isField = "uuid"
				}
			}
			if rest[k-1] == '/' {
				if isField != "" {
					if err := keep(isField, nil, nil); err != nil {
						return err
					}
				}
				break
			}
			depth++
			if depth > maxAnswerDepth {
				return errAnswerTooDeep
			}
			if isField != "" {
				field, fieldOpen, fieldText = isField, i, i+end
			}
		}
		if end == 0 {
			// The decoder reads no further than the root element: what
			// follows it must be checked here, to its end.
			return errors.New("invalid domain XML: markup that does not end")
		}
		i += end
		text = i
	}
	switch {
	case !seenName && sent.name != "":
		return identityChanged("name", sent.name, "")
	case !seenUUID && sent.uuid != "":
		return identityChanged("uuid", sent.uuid, "")
	}
	return nil
}

func identityChanged(element, want, got string) error {
	return fmt.Errorf("the domain's <%s> changed from %q to %q: a sidecar must keep the name and UUID of the domain it is sent", element, want, got)
}

var (
	errAnswerTooDeep  = fmt.Errorf("domain XML nested deeper than %d elements, the limit for an answer", maxAnswerDepth)
	errAnswerTooLarge = fmt.Errorf("domain XML with more than %d elements and attributes, the limit for an answer", maxAnswerTokens)
)

// markupEnd returns the length of the markup at the start of rest that
// ends with the first end found from offset from, or 0 when there is none.
func markupEnd(rest []byte, from int, end string) int {
	k := bytes.Index(rest[from:], []byte(end))
	if k < 0 {
		return 0
	}
	return from + k + len(end)
}

// declarationEnd returns the length of the declaration (<!DOCTYPE ...>) at
// the start of rest, or 0 when it does not end, ending it where the
// tokenizer does: at a '>' outside quotes, comments and nested '<'...'>'.
func declarationEnd(rest []byte) int {
	var quote byte
	depth := 0
	for k := 2; k < len(rest); k++ {
		switch c := rest[k]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '>':
			if depth == 0 {
				return k + 1
			}
			depth--
		case c == '<':
			if !bytes.HasPrefix(rest[k:], []byte("<!--")) {
				depth++
				continue
			}
			e := bytes.Index(rest[k+4:], []byte("-->"))
			if e < 0 {
				return 0
			}
			k += 4 + e + 2
		}
	}
	return 0
}

// elementText returns the character data directly in element (its start
// tag to its end tag; nil for an empty element), as the decoder reads it
// into a string field, and whether it is want. content is what is between
// the element's tags.
func elementText(element, content []byte, want string) (text string, same bool, err error) {
	if element == nil {
		return "", want == "", nil
	}
	if !bytes.ContainsAny(content, "<&\r") {
		if string(content) == want {
			return want, true, nil
		}
		return string(content), false, nil
	}
	d := xml.NewDecoder(bytes.NewReader(element))
	var chars strings.Builder
	depth := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return chars.String(), chars.String() == want, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("invalid domain XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 1 {
				chars.Write(t)
			}
		}
	}
}
