package tpcapp

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

//go:embed schema/*.sql
var schemaFiles embed.FS

const afterLoadMarker = "-- @after-load\n"

// Where item images live (--item-images).
const (
	ImagesInRow = "in-row"
	ImagesFile  = "file"
	ImagesNone  = "none"
)

// ImageModes are the values of --item-images.
var ImageModes = []string{ImagesInRow, ImagesFile, ImagesNone}

// Index sets (--indexes).
const (
	IndexesSpec  = "spec"
	IndexesTuned = "tuned"
)

// IndexModes are the values of --indexes.
var IndexModes = []string{IndexesSpec, IndexesTuned}

// LoadOptions are TPC-App's own settings of a load.
type LoadOptions struct {
	Images string
	// ImageBytes is each item's image size.
	ImageBytes int
	// ImageDir holds the image files under --item-images file.
	ImageDir string
	Indexes  string
}

// maxImageChunk bounds the image bytes of one bulk insert: MySQL sends a
// statement in one packet, and max_allowed_packet is 16 MiB by default.
const maxImageChunk = 8 << 20

func schemaParts(d store.Dialect) (ddl, after string, err error) {
	b, err := schemaFiles.ReadFile(fmt.Sprintf("schema/%s.sql", d))
	if err != nil {
		return "", "", fmt.Errorf("tpcapp has no schema for %s: %w", d, err)
	}
	ddl, after, ok := strings.Cut(string(b), afterLoadMarker)
	if !ok {
		return "", "", fmt.Errorf("tpcapp schema for %s: no %q line", d, strings.TrimSpace(afterLoadMarker))
	}
	return ddl, after, nil
}

// DefaultImageDir is where --item-images file keeps a database's images
// unless --image-dir says: one directory per database, so that runs with
// --no-load find what the load wrote.
func DefaultImageDir(dsn string) string {
	return filepath.Join(os.TempDir(), "tierbench-tpcapp-images", dbTag(dsn))
}

// dbTag names a database in file and queue names, without its password.
func dbTag(dsn string) string {
	sum := sha256.Sum256([]byte(dsn))
	return hex.EncodeToString(sum[:6])
}

// load recreates the tables and writes the population; ImageBytes is the
// load report's Bytes.
func load(ctx context.Context, db *store.DB, p workload.LoadParams, o LoadOptions) (workload.LoadReport, error) {
	return loadPopulation(ctx, db, p.Seed, populationAt(p.Scale), o)
}

// loadPopulation is load of any population, not only a whole scale's:
// the package's tests that call the methods or corrupt the tables load a
// tenth of scale 1 with it (testPopulation), in a tenth of the time.
func loadPopulation(ctx context.Context, db *store.DB, seed uint64, pop population, o LoadOptions) (workload.LoadReport, error) {
	began := time.Now()
	g := gen{seed: seed, now: time.Now().UTC().Truncate(time.Second)}
	ddl, after, err := schemaParts(db.Dialect())
	if err != nil {
		return workload.LoadReport{}, err
	}
	if err := db.ExecScript(ctx, ddl); err != nil {
		return workload.LoadReport{}, fmt.Errorf("create schema: %w", err)
	}
	if o.Images == ImagesFile {
		if err := os.RemoveAll(o.ImageDir); err != nil {
			return workload.LoadReport{}, err
		}
		if err := os.MkdirAll(o.ImageDir, 0o755); err != nil {
			return workload.LoadReport{}, fmt.Errorf("--image-dir: %w", err)
		}
	}
	rep := workload.LoadReport{Tables: make(map[string]int64)}
	tables := []struct {
		name    string
		columns []string
		rows    store.RowSource
	}{
		{"country", []string{"co_id", "co_name", "co_exchange", "co_currency", "co_zone"}, countryRows()},
		{"author", []string{"a_id", "a_fname", "a_lname", "a_mname", "a_dob", "a_bio"}, authorRows(g, pop)},
		{"stock", []string{"s_i_id", "s_qty", "s_pending"}, stockRows(g, pop)},
		{"address", []string{"addr_id", "addr_street1", "addr_street2", "addr_city", "addr_state", "addr_zip", "addr_co_id"}, addressRows(g, pop)},
		{"customer", []string{"c_id", "c_uname", "c_passwd", "c_business_name", "c_business_info", "c_contact_fname", "c_contact_lname",
			"c_contact_phone", "c_contact_email", "c_addr_id", "c_payment_method", "c_cc_number", "c_cc_name", "c_cc_expiry", "c_po_id",
			"c_discount", "c_since"}, customerRows(g, pop)},
	}
	for _, t := range tables {
		n, err := db.BulkInsert(ctx, t.name, t.columns, t.rows)
		rep.Tables[t.name], rep.Rows = n, rep.Rows+n
		if err != nil {
			return rep, fmt.Errorf("load %s: %w", t.name, err)
		}
	}
	itemsBegan := time.Now()
	n, bytes, err := loadItems(ctx, db, g, pop, o)
	rep.Tables["item"], rep.Rows, rep.Bytes, rep.BytesTime = n, rep.Rows+n, bytes, time.Since(itemsBegan)
	if err != nil {
		return rep, fmt.Errorf("load item: %w", err)
	}
	counts, err := loadOrders(ctx, db, g, pop)
	for name, n := range counts {
		rep.Tables[name], rep.Rows = n, rep.Rows+n
	}
	if err != nil {
		return rep, err
	}
	if err := db.ExecScript(ctx, after); err != nil {
		return rep, fmt.Errorf("after load: %w", err)
	}
	if o.Indexes == IndexesTuned {
		tuned, err := schemaFiles.ReadFile("schema/tuned.sql")
		if err != nil {
			return rep, err
		}
		if err := db.ExecScript(ctx, string(tuned)); err != nil {
			return rep, fmt.Errorf("--indexes tuned: %w", err)
		}
	}
	rep.Duration = time.Since(began)
	return rep, nil
}

// rowSource adapts a function that fills the next row to store.RowSource.
type rowSource struct {
	row  []any
	next func(row []any) bool
}

func (s *rowSource) Next() bool    { return s.next(s.row) }
func (s *rowSource) Values() []any { return s.row }

// idRows counts ids 1..n, filling each row with fill.
func idRows(width int, n int64, fill func(id int64, row []any)) *rowSource {
	id := int64(0)
	return &rowSource{row: make([]any, width), next: func(row []any) bool {
		if id == n {
			return false
		}
		id++
		fill(id, row)
		return true
	}}
}

func countryRows() *rowSource {
	return idRows(5, countries, func(id int64, row []any) {
		row[0], row[1], row[2], row[3], row[4] = id, "Country "+strconv.FormatInt(id, 10), 1+float64(id%20)/10, "Currency "+strconv.FormatInt(id, 10), countryZone(id)
	})
}

func authorRows(g gen, pop population) *rowSource {
	return idRows(6, pop.Authors, func(id int64, row []any) {
		s := strconv.FormatInt(id, 10)
		row[0], row[1], row[2], row[3] = id, "First"+s, "Last"+s, "M"
		row[4], row[5] = g.now.AddDate(-30-int(id%50), 0, 0), "The life and works of author "+s+"."
	})
}

func stockRows(g gen, pop population) *rowSource {
	return idRows(3, pop.Items, func(id int64, row []any) { row[0], row[1], row[2] = id, g.itemStock(id), int64(0) })
}

func addressRows(g gen, pop population) *rowSource {
	return idRows(7, pop.Addresses, func(id int64, row []any) {
		a := g.addressOf(id)
		row[0], row[1], row[2], row[3], row[4], row[5], row[6] = id, a.Street1, a.Street2, a.City, a.State, a.Zip, a.Country
	})
}

func customerRows(g gen, pop population) *rowSource {
	return idRows(17, pop.Customers, func(id int64, row []any) {
		s := strconv.FormatInt(id, 10)
		p := g.customerPayment(id)
		uname := Uname(id)
		row[0], row[1], row[2], row[3], row[4] = id, uname, Passwd(uname), "Business "+s, "A business that buys books, number "+s
		row[5], row[6], row[7], row[8], row[9] = "Contact"+s, "Person"+s, "555-"+s, "buyer"+s+"@business.example", 2*id-1
		row[10], row[11], row[12], row[13], row[14] = p.Method, p.CardNumber, p.CardName, p.CardExpiry, p.POID
		row[15], row[16] = g.customerDiscount(id), g.now.AddDate(0, 0, -int(id%1000))
	})
}

var itemColumns = []string{"i_id", "i_title", "i_a_id", "i_pub_date", "i_publisher", "i_subject", "i_desc", "i_srp", "i_cost",
	"i_isbn", "i_page", "i_backing", "i_dimensions", "i_volume", "i_image_size", "i_image", "i_image_path"}

// images are a few blocks of random bytes (an image compresses as badly),
// each item's a copy of one with the item's id in its first bytes.
type images struct {
	blocks [][]byte
}

func newImages(seed uint64, size int) images {
	var im images
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24), 't', 'p', 'c', 'a', 'p', 'p'})
	for range 8 {
		b := make([]byte, size)
		rng.Read(b)
		im.blocks = append(im.blocks, b)
	}
	return im
}

// image is item id's image, in a new slice: a bulk insert may hold a
// batch of rows' values at once.
func (im images) image(id int64) []byte {
	b := append([]byte(nil), im.blocks[id%int64(len(im.blocks))]...)
	if len(b) >= 8 {
		binary.BigEndian.PutUint64(b, uint64(id))
	}
	return b
}

// loadItems writes the items, and under --item-images file their image
// files.
func loadItems(ctx context.Context, db *store.DB, g gen, pop population, o LoadOptions) (rows, bytes int64, err error) {
	var im images
	if o.Images != ImagesNone && o.ImageBytes > 0 {
		im = newImages(g.seed, o.ImageBytes)
	}
	// One bulk insert, except where a batch of rows travels in one packet
	// (MySQL): there, batches of at most maxImageChunk image bytes.
	chunk := pop.Items
	if db.Dialect() == store.MySQL && o.Images == ImagesInRow && o.ImageBytes > 0 {
		chunk = max(1, int64(maxImageChunk/o.ImageBytes))
	}
	for first := int64(1); first <= pop.Items; first += chunk {
		last := min(pop.Items, first+chunk-1)
		id := first - 1
		src := &rowSource{row: make([]any, len(itemColumns)), next: func(row []any) bool {
			if id == last || err != nil {
				return false
			}
			id++
			s := strconv.FormatInt(id, 10)
			row[0], row[1], row[2], row[3] = id, "Title of item "+s, 1+g.n(tagAuthor, id, pop.Authors), g.itemPubDate(id)
			row[4], row[5], row[6] = "Publisher "+strconv.FormatInt(id%100, 10), g.itemSubject(id), "Description of item "+s+"."
			row[7], row[8], row[9], row[10] = g.itemSRP(id), g.itemCost(id), fmt.Sprintf("%013d", id), 20+g.n(tagPages, id, 9980)
			row[11], row[12], row[13], row[14] = backings[id%int64(len(backings))], "20x15x3", g.itemVolume(id), int64(0)
			row[15], row[16] = nil, nil
			if im.blocks != nil {
				img := im.image(id)
				row[14] = int64(len(img))
				bytes += int64(len(img))
				switch o.Images {
				case ImagesInRow:
					row[15] = img
				case ImagesFile:
					path := filepath.Join(o.ImageDir, s+".jpg")
					if err = os.WriteFile(path, img, 0o644); err != nil {
						return false
					}
					row[16] = path
				}
			}
			return true
		}}
		n, ierr := db.BulkInsert(ctx, "item", itemColumns, src)
		rows += n
		if err != nil {
			return rows, bytes, fmt.Errorf("image file: %w", err)
		}
		if ierr != nil {
			return rows, bytes, ierr
		}
	}
	return rows, bytes, nil
}

// loadOrders writes the past orders, all shipped, with their lines and
// shipments.
func loadOrders(ctx context.Context, db *store.DB, g gen, pop population) (map[string]int64, error) {
	counts := make(map[string]int64)
	lineID := int64(0)
	var cur []Line
	var curOrder int64
	lines := &rowSource{row: make([]any, 6)}
	orders := idRows(14, pop.Orders, func(id int64, row []any) {
		customer, shipType, ls := g.pastOrder(pop, id)
		addr := 2*customer - 1
		var volume int64
		for _, l := range ls {
			volume += g.itemVolume(l.ItemID) * l.Qty
		}
		ship := shipCost(shipType, countryZone(g.addressOf(addr).Country), volume)
		sub, disc, tax, total := totals(ls, g.customerDiscount(customer), ship)
		date := g.now.Add(-time.Duration(24*(1+id%365)) * time.Hour)
		p := g.customerPayment(customer)
		row[0], row[1], row[2], row[3], row[4], row[5], row[6] = id, customer, date, sub, disc, tax, ship
		row[7], row[8], row[9], row[10], row[11], row[12], row[13] = total, shipType, addr, StatusShipped, p.Method, "", date.Add(24*time.Hour)
	})
	if n, err := db.BulkInsert(ctx, "orders", []string{"o_id", "o_c_id", "o_date", "o_sub_total", "o_discount", "o_tax", "o_ship_cost",
		"o_total", "o_ship_type", "o_ship_addr_id", "o_status", "o_payment_method", "o_auth_code", "o_ship_date"}, orders); err != nil {
		return counts, fmt.Errorf("load orders: %w", err)
	} else {
		counts["orders"] = n
	}
	lines.next = func(row []any) bool {
		for len(cur) == 0 {
			if curOrder == pop.Orders {
				return false
			}
			curOrder++
			_, _, cur = g.pastOrder(pop, curOrder)
		}
		l := cur[0]
		cur = cur[1:]
		lineID++
		row[0], row[1], row[2], row[3], row[4], row[5] = lineID, curOrder, l.ItemID, l.Qty, l.Price, l.Status
		return true
	}
	if n, err := db.BulkInsert(ctx, "order_line", []string{"ol_id", "ol_o_id", "ol_i_id", "ol_qty", "ol_price", "ol_status"}, lines); err != nil {
		return counts, fmt.Errorf("load order_line: %w", err)
	} else {
		counts["order_line"] = n
	}
	// The past orders were shipped and noticed to SNE before the run.
	ships := idRows(4, pop.Orders, func(id int64, row []any) {
		_, _, ls := g.pastOrder(pop, id)
		row[0], row[1], row[2], row[3] = id, g.now.Add(-time.Duration(24*(1+id%365))*time.Hour+24*time.Hour), int64(len(ls)), int64(1)
	})
	if n, err := db.BulkInsert(ctx, "shipment", []string{"sh_o_id", "sh_date", "sh_lines", "sh_noticed"}, ships); err != nil {
		return counts, fmt.Errorf("load shipment: %w", err)
	} else {
		counts["shipment"] = n
	}
	return counts, nil
}
