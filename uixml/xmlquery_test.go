package uixml

import (
	"bytes"
	"encoding/xml"

	"github.com/antchfx/xmlquery"
)

// xmlqueryNodes reads doc with xmlquery, a general XML parser that builds
// the whole tree: the reference the scanner and the token stream are tested
// against (too hungry for production, where a dump may be 64 MB).
func xmlqueryNodes(doc []byte) (*builder, error) {
	b := &builder{}
	root, err := xmlquery.ParseWithOptions(bytes.NewReader(doc), xmlquery.ParserOptions{
		Decoder: &xmlquery.DecoderOptions{Strict: false, Entity: xml.HTMLEntity},
	})
	if err != nil {
		return nil, err
	}
	b.walk(root, -1, 0)
	return b, nil
}

// walk adds the element nodes under x in document order.
func (b *builder) walk(x *xmlquery.Node, parent, depth int) {
	for c := x.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != xmlquery.ElementNode {
			continue
		}
		attrs := make([]attr, len(c.Attr))
		for i, a := range c.Attr {
			attrs[i] = attr{a.Name.Local, a.Value}
		}
		idx := b.element(c.Data, attrs, parent, depth)
		if idx >= 0 {
			b.walk(c, idx, depth+1)
		} else {
			b.walk(c, parent, depth)
		}
	}
}
