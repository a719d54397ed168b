package sim

// The KV cache is a pool of fixed-size blocks shared by every KV group, as
// in vLLM's V1 BlockPool: block 0 is a permanently reserved null block, free
// blocks sit in an LRU queue (allocation pops the front, release appends to
// the tail), and a cached block keeps its content hash while free until it is
// popped for reuse (lazy eviction). Prefix caching hashes full blocks by
// content chain, so identical prefixes share blocks.

const nullBlock = 0

// blockPool is the shared pool. Not safe for concurrent use.
type blockPool struct {
	ref        []int32  // reference count per block
	hash       []uint64 // cache key of a cached block, 0 if none
	prev, next []int32  // free queue links, -1 at the ends
	inFree     []bool
	head, tail int32
	numFree    int
	cached     map[uint64]int32 // cache key → block
}

func newBlockPool(n int) *blockPool {
	p := &blockPool{
		ref: make([]int32, n), hash: make([]uint64, n),
		prev: make([]int32, n), next: make([]int32, n), inFree: make([]bool, n),
		head: -1, tail: -1, cached: make(map[uint64]int32),
	}
	for b := 1; b < n; b++ {
		p.pushTail(int32(b))
	}
	p.ref[nullBlock] = 1
	return p
}

func (p *blockPool) pushTail(b int32) {
	p.prev[b], p.next[b] = p.tail, -1
	if p.tail >= 0 {
		p.next[p.tail] = b
	} else {
		p.head = b
	}
	p.tail = b
	p.inFree[b] = true
	p.numFree++
}

func (p *blockPool) unlink(b int32) {
	if p.prev[b] >= 0 {
		p.next[p.prev[b]] = p.next[b]
	} else {
		p.head = p.next[b]
	}
	if p.next[b] >= 0 {
		p.prev[p.next[b]] = p.prev[b]
	} else {
		p.tail = p.prev[b]
	}
	p.prev[b], p.next[b] = -1, -1
	p.inFree[b] = false
	p.numFree--
}

// take pops the least recently freed block, evicting its cached content.
func (p *blockPool) take() int32 {
	b := p.head
	p.unlink(b)
	if h := p.hash[b]; h != 0 {
		if p.cached[h] == b {
			delete(p.cached, h)
		}
		p.hash[b] = 0
	}
	p.ref[b] = 1
	return b
}

// touch adds a reference to a (possibly free) cached block.
func (p *blockPool) touch(b int32) {
	if p.inFree[b] {
		p.unlink(b)
	}
	p.ref[b]++
}

// release drops a reference; an unreferenced block joins the free queue's
// tail and stays cached until reused.
func (p *blockPool) release(b int32) {
	if b == nullBlock {
		return
	}
	p.ref[b]--
	if p.ref[b] == 0 {
		p.pushTail(b)
	}
}

// commit registers block b's content under key (first writer wins).
func (p *blockPool) commit(b int32, key uint64) {
	if b == nullBlock || p.hash[b] != 0 {
		return
	}
	if _, ok := p.cached[key]; ok {
		return
	}
	p.hash[b] = key
	p.cached[key] = b
}

// usable is the number of blocks requests can hold (all but the null block).
func (p *blockPool) usable() int { return len(p.ref) - 1 }

// kvState is one request's hold on the cache.
type kvState struct {
	tables    [][]int32 // per group, block per block index; nullBlock where a window skipped it
	hashes    []uint64  // content hash chain of the request's full blocks
	committed int       // full blocks already offered to the cache
}

// kvManager allocates blocks for requests across all KV groups.
type kvManager struct {
	pool          *blockPool
	groups        []KVGroup
	blockSize     int
	prefixCaching bool
}

func newKVManager(k Capacity, blockSize int, prefixCaching bool) *kvManager {
	return &kvManager{pool: newBlockPool(k.NumBlocks), groups: k.Groups, blockSize: blockSize, prefixCaching: prefixCaching}
}

// usage is vLLM's kv_cache_usage_perc: 1 − free / (blocks − 1), in [0, 1].
func (m *kvManager) usage() float64 {
	return 1 - float64(m.pool.numFree)/float64(m.pool.usable())
}

func groupKey(h uint64, g int) uint64 {
	k := mix64(h ^ (uint64(g+1) * 0x9e3779b97f4a7c15))
	if k == 0 {
		k = 1
	}
	return k
}

// blockHashes extends r's hash chain to cover n full blocks.
func (m *kvManager) blockHashes(r *Request, n int) []uint64 {
	bs := m.blockSize
	for i := len(r.kv.hashes); i < n; i++ {
		var h uint64 = 0xcbf29ce484222325
		if i > 0 {
			h = r.kv.hashes[i-1]
		}
		for j := i * bs; j < (i+1)*bs; j++ {
			h = mix64(h ^ uint64(r.token(j)))
		}
		r.kv.hashes = append(r.kv.hashes, h)
	}
	return r.kv.hashes[:n]
}

// lookup finds the longest prefix of r's known tokens held in the cache for
// every group, in whole blocks, leaving at least the last token to compute.
// It returns the hit length in tokens and, per group, the blocks to reuse.
func (m *kvManager) lookup(r *Request) (int, [][]int32) {
	if !m.prefixCaching {
		return 0, nil
	}
	maxBlocks := (r.numTokens() - 1) / m.blockSize
	hashes := m.blockHashes(r, maxBlocks)
	cached := func(i, g int) (int32, bool) {
		b, ok := m.pool.cached[groupKey(hashes[i], g)]
		return b, ok
	}
	hit := maxBlocks
	for g, grp := range m.groups {
		if grp.SlidingWindow > 0 {
			continue
		}
		n := 0
		for n < hit {
			if _, ok := cached(n, g); !ok {
				break
			}
			n++
		}
		hit = n
	}
	// Sliding-window groups need the blocks covering one window before the
	// hit point; shrink until every group agrees.
	for changed := true; changed && hit > 0; {
		changed = false
		for g, grp := range m.groups {
			if grp.SlidingWindow == 0 {
				continue
			}
			nwin := ceilDiv(grp.SlidingWindow-1, m.blockSize)
			e, run := 0, 0
			for i := hit - 1; i >= 0; i-- {
				if _, ok := cached(i, g); !ok {
					run = 0
					continue
				}
				run++
				if run >= nwin || i == 0 {
					e = i + run
					break
				}
			}
			if e < hit {
				hit, changed = e, true
			}
		}
	}
	if hit == 0 {
		return 0, nil
	}
	blocks := make([][]int32, len(m.groups))
	for g, grp := range m.groups {
		blocks[g] = make([]int32, hit)
		first := 0
		if grp.SlidingWindow > 0 {
			first = max(0, hit-ceilDiv(grp.SlidingWindow-1, m.blockSize))
		}
		for i := first; i < hit; i++ {
			blocks[g][i], _ = cached(i, g)
		}
	}
	return hit * m.blockSize, blocks
}

// allocate reserves slots so r holds total tokens, reusing hit blocks (from
// lookup, for a request being admitted). It first drops sliding-window
// blocks that fell out of the window of r's computed tokens. It reports
// false, changing nothing else, when the pool is short.
func (m *kvManager) allocate(r *Request, computed, total int, hit [][]int32) bool {
	bs := m.blockSize
	if r.kv.tables == nil {
		r.kv.tables = make([][]int32, len(m.groups))
	}
	for g, grp := range m.groups {
		if grp.SlidingWindow == 0 {
			continue
		}
		skip := max(0, computed-grp.SlidingWindow+1) / bs
		t := r.kv.tables[g]
		for i := min(skip, len(t)) - 1; i >= 0 && t[i] != nullBlock; i-- {
			m.pool.release(t[i])
			t[i] = nullBlock
		}
	}
	want := ceilDiv(total, bs)
	need := 0
	for g := range m.groups {
		have := len(r.kv.tables[g])
		if hit != nil {
			for _, b := range hit[g] {
				if b != nullBlock && m.pool.inFree[b] {
					need++
				}
			}
			have = len(hit[g])
		}
		need += max(0, want-have)
	}
	if need > m.pool.numFree {
		return false
	}
	for g := range m.groups {
		if hit != nil {
			for _, b := range hit[g] {
				if b != nullBlock {
					m.pool.touch(b)
				}
			}
			r.kv.tables[g] = append(r.kv.tables[g][:0], hit[g]...)
		}
		for len(r.kv.tables[g]) < want {
			r.kv.tables[g] = append(r.kv.tables[g], m.pool.take())
		}
	}
	if hit != nil {
		r.kv.committed = len(hit[0])
	}
	if m.prefixCaching {
		full := total / bs
		hashes := m.blockHashes(r, full)
		for i := r.kv.committed; i < full; i++ {
			for g := range m.groups {
				m.pool.commit(r.kv.tables[g][i], groupKey(hashes[i], g))
			}
		}
		r.kv.committed = max(r.kv.committed, full)
	}
	return true
}

// free releases every block r holds, tail first so a chain's end is evicted
// before its prefix.
func (m *kvManager) free(r *Request) {
	for g, t := range r.kv.tables {
		for i := len(t) - 1; i >= 0; i-- {
			m.pool.release(t[i])
		}
		r.kv.tables[g] = t[:0]
	}
	r.kv.committed = 0
}

// held is the number of blocks r holds (for tests).
func (m *kvManager) held(r *Request) int {
	n := 0
	for _, t := range r.kv.tables {
		for _, b := range t {
			if b != nullBlock {
				n++
			}
		}
	}
	return n
}

// mix64 is SplitMix64's finaliser: a fast, well-distributed 64-bit mix.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
