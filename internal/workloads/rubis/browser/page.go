package browser

import (
	"bytes"
	"strconv"
)

// page is what the browser keeps of the last page received: what the
// original's extractors would find in it. Like the original (UserSession's
// extract*FromHTML), it searches the raw reply: every "itemId=", the first
// "userId=" and "to=", the first two "&page=", the "name=X value=" form
// fields and the <IMG SRC="…"> images, wherever they are. Two spellings a
// modern site may write are read the same as the PHP site's: "&amp;page="
// for "&page=", and quoted form fields (name="maxQty" value="3").
//
// A tokenizer would be more general and is several times slower: on a
// search page it allocated hundreds of objects for attributes nobody
// reads, while the raw search finds the keys with bytes.Index alone.
type page struct {
	// itemIDs: every "itemId=" occurrence in document order; the original
	// picks one uniformly. -1 for an occurrence not followed by a number.
	itemIDs []int
	userID  int // first "userId="; -1: none
	to      int // first "to="; -1: none
	// pages: the first two "&page=" values.
	pages  [2]int
	nPages int
	// Form fields: maxQty, minBid, to.
	maxQty, formTo int
	minBid         float32
	hasMinBid      bool
	// images: the original downloads every <IMG SRC="…"> of a page (upper
	// case, as its matcher is).
	images []string
	// sorry: the page says "Sorry" (nothing matched): the next request
	// goes back. errorPage: it says "ERROR".
	sorry, errorPage bool
	size             int
}

var (
	keyItemID  = []byte("itemId=")
	keyUserID  = []byte("userId=")
	keyTo      = []byte("to=")
	keyPage    = []byte("page=")
	keyName    = []byte("name=")
	keyValue   = []byte("value=")
	imgPrefix  = []byte(`<IMG SRC="`)
	wordSorry  = []byte("Sorry")
	wordError  = []byte("ERROR")
	nameMaxQty = []byte("maxQty")
	nameMinBid = []byte("minBid")
	nameTo     = []byte("to")
)

func (p *page) reset() {
	p.itemIDs = p.itemIDs[:0]
	p.images = p.images[:0]
	p.userID, p.to, p.maxQty, p.formTo = -1, -1, -1, -1
	p.nPages = 0
	p.minBid, p.hasMinBid = 0, false
	p.sorry, p.errorPage = false, false
	p.size = 0
}

// parse reads body. Whatever the bytes, it never fails: what is not found
// is -1 or absent.
func (p *page) parse(body []byte, images bool) {
	p.reset()
	p.size = len(body)
	p.sorry = bytes.Contains(body, wordSorry)
	p.errorPage = bytes.Contains(body, wordError)
	for rest := body; ; {
		i := bytes.Index(rest, keyItemID)
		if i < 0 {
			break
		}
		rest = rest[i+len(keyItemID):]
		p.itemIDs = append(p.itemIDs, number(rest))
	}
	if i := bytes.Index(body, keyUserID); i >= 0 {
		p.userID = number(body[i+len(keyUserID):])
	}
	if i := bytes.Index(body, keyTo); i >= 0 {
		p.to = number(body[i+len(keyTo):])
	}
	for rest, seen := body, 0; p.nPages < 2; {
		i := bytes.Index(rest, keyPage)
		if i < 0 {
			break
		}
		before := body[:seen+i]
		rest, seen = rest[i+len(keyPage):], seen+i+len(keyPage)
		if bytes.HasSuffix(before, []byte("&")) || bytes.HasSuffix(before, []byte("&amp;")) {
			p.pages[p.nPages] = max(number(rest), 0)
			p.nPages++
		}
	}
	for rest := body; ; {
		i := bytes.Index(rest, keyName)
		if i < 0 {
			break
		}
		rest = rest[i+len(keyName):]
		if name, value, ok := formField(rest); ok {
			p.field(name, value)
		}
	}
	if images {
		for rest := body; ; {
			i := bytes.Index(rest, imgPrefix)
			if i < 0 {
				break
			}
			rest = rest[i+len(imgPrefix):]
			end := bytes.IndexByte(rest, '"')
			if end < 0 {
				break
			}
			p.images = append(p.images, string(rest[:end]))
			rest = rest[end:]
		}
	}
}

// formField reads what follows "name=": the field's name, blanks, then
// "value=" and the value, each optionally quoted.
func formField(v []byte) (name, value []byte, ok bool) {
	name, v = attrValue(v)
	i := 0
	for i < len(v) && isBlank(v[i]) {
		i++
	}
	if i == 0 || !bytes.HasPrefix(v[i:], keyValue) {
		return nil, nil, false
	}
	value, _ = attrValue(v[i+len(keyValue):])
	return name, value, true
}

// attrValue splits an attribute value, quoted or not, from what follows.
func attrValue(v []byte) (value, rest []byte) {
	if len(v) > 0 && (v[0] == '"' || v[0] == '\'') {
		if end := bytes.IndexByte(v[1:], v[0]); end >= 0 {
			return v[1 : 1+end], v[2+end:]
		}
		return v[1:], nil
	}
	i := 0
	for i < len(v) && !isBlank(v[i]) && v[i] != '>' {
		i++
	}
	return v[:i], v[i:]
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// field records the first of each form field the original reads.
func (p *page) field(name, value []byte) {
	switch {
	case bytes.Equal(name, nameMaxQty) && p.maxQty < 0:
		p.maxQty = number(value)
	case bytes.Equal(name, nameTo) && p.formTo < 0:
		p.formTo = number(value)
	case bytes.Equal(name, nameMinBid) && !p.hasMinBid:
		if f, err := strconv.ParseFloat(string(token(value)), 32); err == nil {
			p.minBid, p.hasMinBid = float32(f), true
		}
	}
}

// token is the start of v up to where the original's extractor ends a
// value (the first of " ? & >) or where an attribute or text ends (a
// blank, ' or <); at most 32 bytes, which no number the site writes
// reaches.
func token(v []byte) []byte {
	v = v[:min(len(v), 32)]
	for i, c := range v {
		switch c {
		case '"', '?', '&', '>', '<', '\'', ' ', '\t', '\n', '\r':
			return v[:i]
		}
	}
	return v
}

// number is the integer a value starts with, or -1 (the original would
// die on a malformed number; a missing id is what it handles).
func number(v []byte) int {
	n, err := strconv.Atoi(string(token(v)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}
