// SPDX-License-Identifier: Apache-2.0

package pipeline

import (
	"bytes"
	"encoding/xml"
	"os"
	"strings"
	"testing"
)

// TestAnswerScanReadsTheIdentityTheDecoderReads: on well-formed answers
// written to mislead a scan of the bytes (markup in comments, CDATA,
// attribute values, declarations; references, namespaces, a second <name>),
// checkAnswer accepts exactly the name and UUID libvirtxml decodes.
func TestAnswerScanReadsTheIdentityTheDecoderReads(t *testing.T) {
	const uuid = "<uuid>5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10</uuid>"
	for name, doc := range map[string]string{
		"Plain":               `<domain type="kvm"><name>a</name>` + uuid + `</domain>`,
		"Comment":             `<domain type="kvm"><!-- <name>b</name> --><name>a</name>` + uuid + `</domain>`,
		"CDATAInName":         `<domain><name><![CDATA[a<name>b</name>]]></name>` + uuid + `</domain>`,
		"CDATAOutside":        `<domain><description><![CDATA[</description><name>b</name>]]></description><name>a</name>` + uuid + `</domain>`,
		"AttributeWithMarkup": `<domain type="kvm" x='>'><title t="/>"/><name a="/>">a</name>` + uuid + `</domain>`,
		"References":          `<domain><name>a&amp;b&#45;c&#x2d;</name>` + uuid + `</domain>`,
		"CRLF":                "<domain><name>a\r\nb</name>" + uuid + "</domain>",
		"Namespaced":          `<domain xmlns:x="urn:x"><x:name>a</x:name>` + uuid + `</domain>`,
		"NameInMetadata":      `<domain><name>a</name>` + uuid + `<metadata><name>b</name><x><uuid>c</uuid></x></metadata></domain>`,
		"NameWithChild":       `<domain><name>a<x>b</x>c</name>` + uuid + `</domain>`,
		"EmptyName":           `<domain><name/>` + uuid + `</domain>`,
		"NoUUID":              `<domain><name>a</name></domain>`,
		"ProcessingInstr":     `<?xml version="1.0"?><domain><?pi <name>b</name> ?><name>a</name>` + uuid + `</domain>`,
		"Doctype":             `<!DOCTYPE domain [ <!ENTITY e "x>y"> <!-- ] > --> ]><domain><name>a</name>` + uuid + `</domain>`,
		"TrailingComment":     `<domain><name>a</name>` + uuid + `</domain><!-- after --> `,
		"Whitespace":          "\n<domain>\n  <name>\ta\n</name>\n  " + uuid + "\n</domain>\n",
	} {
		t.Run(name, func(t *testing.T) {
			d, err := parseDomain([]byte(doc))
			if err != nil {
				t.Fatalf("the decoder refuses the test's answer: %v", err)
			}
			sent := domainIdentity{name: d.Name, uuid: d.UUID}
			if err := checkAnswer([]byte(doc), sent); err != nil {
				t.Errorf("refused with the decoder's name %q and UUID %q: %v", d.Name, d.UUID, err)
			}
			if err := checkAnswer([]byte(doc), domainIdentity{name: "other", uuid: d.UUID}); err == nil {
				t.Errorf("accepted although the decoder reads the name %q", d.Name)
			}
			if err := checkAnswer([]byte(doc), domainIdentity{name: d.Name, uuid: "other"}); err == nil {
				t.Errorf("accepted although the decoder reads the UUID %q", d.UUID)
			}
		})
	}
}

// TestAnswerScanRefusesWhatTheDecoderWouldNotRead: the decoder stops at the
// end of the root element, so what follows it is checked by the scan alone;
// and of two <name> elements it keeps one: both must be the name sent.
func TestAnswerScanRefusesWhatTheDecoderWouldNotRead(t *testing.T) {
	const domain = `<domain><name>a</name></domain>`
	sent := domainIdentity{name: "a"}
	for name, doc := range map[string]string{
		"SecondRoot":      domain + domain,
		"OtherRoot":       domain + `<network/>`,
		"Text":            domain + `x`,
		"CDATA":           domain + `<![CDATA[x]]>`,
		"StrayEndTag":     domain + `</domain>`,
		"SecondName":      `<domain><name>a</name><name>b</name></domain>`,
		"SecondNameFirst": `<domain><name>b</name><name>a</name></domain>`,
		"Declaration":     domain + `<!DOCTYPE domain>`,
		"UnendedComment":  domain + `<!-- </domain>`,
		"UnendedStartTag": domain + `<a b="</domain>`,
		"Unended":         domain + `<`,
	} {
		t.Run(name, func(t *testing.T) {
			if err := checkAnswer([]byte(doc), sent); err == nil {
				t.Errorf("%s accepted", doc)
			}
		})
	}
}

// TestAnswerBoundsCostLittle: refusing the 13.4 MiB answer nested 2,000,000
// deep allocates nothing and reads a few hundred bytes of it; the domain
// of the tests is checked without allocating.
func TestAnswerBoundsCostLittle(t *testing.T) {
	base, err := os.ReadFile("../testdata/domain.xml")
	if err != nil {
		t.Fatal(err)
	}
	sent := domainIdentity{name: "default_web-01", uuid: "5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10"}
	i := strings.LastIndex(string(base), "</domain>")
	deep := string(base[:i]) + strings.Repeat("<a>", 2_000_000) + strings.Repeat("</a>", 2_000_000) + string(base[i:])
	for name, tc := range map[string]struct {
		doc     []byte
		refused bool
	}{
		"Deep":   {[]byte(deep), true},
		"Domain": {base, false},
	} {
		var err error
		allocs := testing.AllocsPerRun(20, func() { err = checkAnswer(tc.doc, sent) })
		if (err != nil) != tc.refused {
			t.Fatalf("%s: refused %v: %v", name, err != nil, err)
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations", name, allocs)
		}
	}
}

// BenchmarkCheckAnswer is the check of a sidecar's answer: the domain of
// the tests (6 KB), and the 13.4 MiB answer nested 2,000,000 deep.
func BenchmarkCheckAnswer(b *testing.B) {
	base, err := os.ReadFile("../testdata/domain.xml")
	if err != nil {
		b.Fatal(err)
	}
	sent := domainIdentity{name: "default_web-01", uuid: "5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10"}
	i := strings.LastIndex(string(base), "</domain>")
	deep := []byte(string(base[:i]) + strings.Repeat("<a>", 2_000_000) + strings.Repeat("</a>", 2_000_000) + string(base[i:]))
	b.Run("domain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkAnswer(base, sent); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("deep", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkAnswer(deep, sent); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}

// FuzzCheckAnswer: an answer checkAnswer accepts, and the decoder decodes,
// has the name and UUID it was checked against, and the depth and number of
// elements and attributes of its root element are within the bounds.
func FuzzCheckAnswer(f *testing.F) {
	base, err := os.ReadFile("../testdata/domain.xml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(base, "default_web-01", "5b1d8a6e-2f43-4c9a-9a0e-7d3c1e2f4a10")
	f.Add([]byte(`<domain><name>a&amp;</name><!-- <name>b</name> --><uuid><![CDATA[u]]></uuid></domain>`), "a&", "u")
	f.Add([]byte(`<!DOCTYPE d [<!ENTITY x "]>">]><domain x='>'><name>a</name></domain>`), "a", "")
	f.Fuzz(func(t *testing.T, data []byte, name, uuid string) {
		if checkAnswer(data, domainIdentity{name: name, uuid: uuid}) != nil {
			return
		}
		d, err := parseDomain(data)
		if err != nil {
			return
		}
		if d.Name != name || d.UUID != uuid {
			t.Fatalf("accepted for name %q uuid %q; the decoder reads %q and %q", name, uuid, d.Name, d.UUID)
		}
		dec := xml.NewDecoder(bytes.NewReader(data))
		depth, tokens := 0, 0
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				depth++
				tokens += 1 + len(tok.Attr)
				if depth > maxAnswerDepth || tokens > maxAnswerTokens {
					t.Fatalf("accepted with an element at depth %d, %d elements and attributes", depth, tokens)
				}
			case xml.EndElement:
				depth--
			}
			if depth == 0 && tokens > 0 {
				break
			}
		}
	})
}
