package rubis

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
	"github.com/tierbench/tierbench/internal/workload"
)

// replicaSite is the RUBiS site (servlets) over a private primary with
// two streaming standbys, its browsing pages' reads on the standbys.
type replicaSite struct {
	db  *store.DB
	srv *httptest.Server
}

func openReplicaSite(t *testing.T, c *testsvc.PGCluster, opts store.ReplicaOptions) replicaSite {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, c.Primary.DSNOf("test"), store.Options{Threads: testThreads})
	var dsns []store.DSN
	for _, s := range c.Standbys {
		dsns = append(dsns, store.MustParseDSN(s.DSNOf("test")))
	}
	if err := storetest.Backends().AttachReplicas(ctx, db, dsns, opts); err != nil {
		t.Fatal(err)
	}
	if err := db.AwaitReplicas(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	d, err := NewServlets(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewSite(d, SiteOptions{Threads: testThreads, Positions: true}))
	t.Cleanup(srv.Close)
	return replicaSite{db: db, srv: srv}
}

// browserClient is a browser's HTTP client: it keeps the cookies the site
// sets, as a person's browser does.
func browserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// page fetches path (POST when form is set) and returns the body and the
// position cookie the response set ("" when none).
func (s replicaSite) page(t *testing.T, c *http.Client, path string, q, form url.Values) (string, string) {
	t.Helper()
	var resp *http.Response
	var err error
	if form != nil {
		resp, err = c.PostForm(s.srv.URL+path, form)
	} else {
		resp, err = c.Get(s.srv.URL + path + "?" + q.Encode())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d, %v\n%s", path, resp.StatusCode, err, body)
	}
	var set string
	for _, ck := range resp.Cookies() {
		if ck.Name == PositionCookie {
			set = ck.Value
		}
	}
	return string(body), set
}

func (s replicaSite) stats() (violations, waits, fallbacks, replicaReads int64, primary int64) {
	rs := s.db.Stats().Replicas
	for _, r := range rs.Replicas {
		violations += r.ReadYourWritesViolations
		waits += r.CausalWaits
		fallbacks += r.CausalFallbacks
		replicaReads += r.Reads
	}
	return violations, waits, fallbacks, replicaReads, rs.PrimaryReads
}

// TestSiteReadYourWrites: a browser's comment (StoreComment) sets the
// position cookie; with replay paused on both standbys, each of its next
// three ViewUserInfo pages reads the stale user on a replica and counts a
// read-your-writes violation (eventual), and another browser's read, which
// carries no position, counts none. Under causal reads the same page waits
// for its replica, gives up and reads the comment on the primary: no
// violation. The read pages and the static ones set no cookie.
func TestSiteReadYourWrites(t *testing.T) {
	testsvc.SkipUnlessLong(t, "starts a PostgreSQL primary and two standbys, 20 s on 2 idle cores; internal/store/postgres's TestReplicas runs the store's side in make test")
	t.Parallel()
	c := testsvc.PGReplicas(t, 2)
	ctx := context.Background()
	{
		db := storetest.Open(t, c.Primary.DSNOf("test"), store.Options{Threads: testThreads})
		if _, err := loadAt(ctx, db, workload.LoadParams{Scale: 1, Seed: testSeed}, timeBase(time.Now())); err != nil {
			t.Fatalf("load: %v", err)
		}
	}
	eventual := openReplicaSite(t, c, store.ReplicaOptions{Reads: store.Eventual})
	causal := openReplicaSite(t, c, store.ReplicaOptions{Reads: store.Causal, CausalWait: 200 * time.Millisecond})
	for _, s := range c.Standbys {
		s.Exec(t, "SELECT pg_wal_replay_pause()")
	}
	t.Cleanup(func() {
		for _, s := range c.Standbys {
			if s.PID() != 0 {
				s.Exec(t, "SELECT pg_wal_replay_resume()")
			}
		}
	})
	const user = "7"
	info := url.Values{"userId": {user}}
	comment := func(text string) url.Values {
		return url.Values{"to": {user}, "from": {"4"}, "itemId": {"1"}, "rating": {"1"}, "comment": {text}}
	}

	t.Run("eventual", func(t *testing.T) {
		b := browserClient(t)
		if _, set := eventual.page(t, b, "/PHP/index.html", nil, nil); set != "" {
			t.Errorf("the home page set %s=%s; only a write does", PositionCookie, set)
		}
		if _, set := eventual.page(t, b, "/PHP/ViewUserInfo.php", info, nil); set != "" {
			t.Errorf("a read page set %s=%s before any write", PositionCookie, set)
		}
		_, set := eventual.page(t, b, "/PHP/StoreComment.php", nil, comment("fresh-eventual"))
		if _, err := store.ParseLSN(set); err != nil {
			t.Fatalf("StoreComment set %s=%q: %v", PositionCookie, set, err)
		}
		v0, _, _, _, _ := eventual.stats()
		for i := range 3 {
			body, set := eventual.page(t, b, "/PHP/ViewUserInfo.php", info, nil)
			if strings.Contains(body, "fresh-eventual") {
				t.Fatalf("read %d shows the comment: the replica was not behind (replay paused)", i)
			}
			if set != "" {
				t.Errorf("read %d set the cookie again (%s)", i, set)
			}
		}
		// Another browser, no position: as stale, nothing of its own missed.
		eventual.page(t, browserClient(t), "/PHP/ViewUserInfo.php", info, nil)
		if v, _, _, _, primary := eventual.stats(); v-v0 != 3 || primary != 0 {
			t.Errorf("read-your-writes violations %d, primary reads %d; want 3, 0", v-v0, primary)
		}
	})

	t.Run("causal", func(t *testing.T) {
		b := browserClient(t)
		causal.page(t, b, "/PHP/StoreComment.php", nil, comment("fresh-causal"))
		for i := range 2 {
			body, _ := causal.page(t, b, "/PHP/ViewUserInfo.php", info, nil)
			if !strings.Contains(body, "fresh-causal") {
				t.Fatalf("causal read %d misses the browser's own comment", i)
			}
		}
		if v, _, fellBack, _, primary := causal.stats(); v != 0 || fellBack != 2 || primary != 2 {
			t.Errorf("violations %d, fallbacks %d, primary reads %d; want 0, 2, 2", v, fellBack, primary)
		}
		// A cookie that does not parse is no position: routed, unchecked.
		req, _ := http.NewRequest(http.MethodGet, causal.srv.URL+"/PHP/ViewUserInfo.php?userId="+user, nil)
		req.AddCookie(&http.Cookie{Name: PositionCookie, Value: "x" + strconv.Itoa(1)})
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("a page with a garbled cookie: %v, %v", resp, err)
		}
		resp.Body.Close()
		if v, _, fellBack, _, _ := causal.stats(); v != 0 || fellBack != 2 {
			t.Errorf("after a garbled cookie: violations %d, fallbacks %d; want 0, 2", v, fellBack)
		}
	})
}
