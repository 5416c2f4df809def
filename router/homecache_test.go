package router

import (
	"testing"
	"time"
)

// TestHomeCacheLRU: the least recently used home is evicted beyond the
// size, a get refreshes recency, a put replaces, drop forgets.
func TestHomeCacheLRU(t *testing.T) {
	c := newHomeCache(time.Hour, 2)
	c.put("a", "SC-1")
	c.put("b", "SC-2")
	if sc, ok := c.get("a"); !ok || sc != "SC-1" { // a is now the most recent
		t.Fatalf("get a = %q, %v", sc, ok)
	}
	c.put("c", "SC-3") // evicts b
	if _, ok := c.get("b"); ok {
		t.Fatal("b survived beyond the size")
	}
	c.put("a", "SC-9")
	if sc, ok := c.get("a"); !ok || sc != "SC-9" {
		t.Fatalf("replaced a = %q, %v", sc, ok)
	}
	c.drop("a")
	if _, ok := c.get("a"); ok {
		t.Fatal("dropped a still cached")
	}
	if sc, ok := c.get("c"); !ok || sc != "SC-3" {
		t.Fatalf("get c = %q, %v", sc, ok)
	}
}

// TestHomeCacheExpires: an entry is not served after its TTL.
func TestHomeCacheExpires(t *testing.T) {
	c := newHomeCache(20*time.Millisecond, 10)
	c.put("a", "SC-1")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := c.get("a"); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("entry still served 10 s after a 20 ms TTL")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHomeCacheOff: a TTL of zero caches nothing.
func TestHomeCacheOff(t *testing.T) {
	c := newHomeCache(0, 10)
	c.put("a", "SC-1")
	if _, ok := c.get("a"); ok {
		t.Fatal("cached with the TTL off")
	}
	c.drop("a")
}
