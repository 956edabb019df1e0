package numcheck

import (
	"math"
	"slices"
)

// Budgets of the derivation step.
const (
	// maxOperands is how many numbers (the answer's first, then the
	// question's, then conventional factors) may be combined.
	maxOperands = 96
	// maxDerivedTargets is how many unfound numbers are tried as one
	// step from two operands; later ones are reported as they are.
	maxDerivedTargets = 32
	// maxQuestionNumbers is how many numbers of the question are
	// operands.
	maxQuestionNumbers = 48
	// maxDerivedWidth bounds how imprecise a derived number may be, in
	// units of the precision of the number it would verify: 0.73² is
	// 0.5256 to 0.5402 (0.0146 wide) and may verify 0.54 (0.01), a sum of
	// two numbers to the cent is two cents wide, but the difference of
	// two nearly equal numbers, 0 to 4.25e6, verifies nothing.
	maxDerivedWidth = 3
)

// factors relate a number to a source's: the same, a percentage of a
// fraction, a fraction of a percentage.
var factors = [...]float64{1, 100, 0.01}

// conventions are numbers an answer may use without computing them: π,
// e, √2, φ, significance and confidence levels, the z values of the
// usual intervals, Tukey's 1.5 × IQR. Powers of ten are conventions too
// (see isConvention).
var conventions = []float64{
	math.Pi, math.E, math.Sqrt2, math.Phi,
	0.05, 0.01, 0.001, 0.1, 0.9, 0.95, 0.99, 0.975, 90, 95, 99, 97.5,
	1.96, 1.645, 2.576, 1.5,
}

// operandConstants may multiply or divide the answer's and the
// question's numbers: twice, three times, a quarter, percent, months,
// hours, minutes.
var operandConstants = []float64{2, 3, 4, 12, 24, 60, 100}

// offsetConstants may be added to or subtracted from them: n − 1,
// inclusive bounds, 1 + r, 1 − p, 100% − p.
var offsetConstants = []float64{1, 100}

// matcher holds the answer's atoms and what is known of them.
type matcher struct {
	items   []item
	pending int // atoms not yet found
	idx     *index
	budget  int // source bytes left to scan
}

func newMatcher(items []item) *matcher {
	m := &matcher{items: items, budget: MaxTotalSourceBytes}
	var ivs []interval
	for i := range m.items {
		for a := range m.items[i].alts {
			for k := range m.items[i].alts[a] {
				at := &m.items[i].alts[a][k]
				if at.exempt || isConvention(at) {
					at.verified = true
					continue
				}
				m.pending++
				lo, hi := target(at)
				for _, f := range factors {
					ivs = append(ivs, interval{lo / f, hi / f, at})
				}
			}
		}
	}
	m.idx = buildIndex(ivs)
	return m
}

// target returns the interval of source values that round (half up or
// half even) or truncate to the atom at its precision: [v−q/2, v+q).
// Digits past the twelfth significant one are not checked, and the ends
// move down by a thousandth of the precision, more than parsing and
// scaling lose in the last place.
func target(a *atom) (lo, hi float64) {
	q := max(a.q, minPrecision*a.v)
	tol := q / 1000
	return a.v - q/2 - tol, a.v + q - tol
}

// minPrecision is the finest relative precision checked: twelve
// significant digits.
const minPrecision = 1e-12

// isConvention reports whether an atom is a conventional constant or a
// power of ten at or above 100.
func isConvention(a *atom) bool {
	lo, hi := target(a)
	for _, c := range conventions {
		if lo <= c && c < hi {
			return true
		}
	}
	if a.v >= 100 && a.q <= a.v/10 {
		p := math.Round(math.Log10(a.v))
		if c := math.Pow(10, p); lo <= c && c < hi {
			return true
		}
	}
	return false
}

// scanSources looks the pending atoms up in every source, runs first.
func (m *matcher) scanSources(src Sources) {
	for _, r := range src.Runs {
		if !m.scan(r.Output) || !m.scan(r.Code) {
			return
		}
	}
	if !m.scan(src.Question) {
		return
	}
	for _, f := range src.Files {
		if !m.scan(f) {
			return
		}
	}
	for _, e := range src.Earlier {
		if !m.scan(e) {
			return
		}
	}
}

// scan looks the pending atoms up in one source; it reports whether any
// are left and the budget allows more.
func (m *matcher) scan(s string) bool {
	if len(s) > MaxSourceBytes {
		head := MaxSourceBytes * 3 / 4
		if !m.scanPart(s[:head]) {
			return false
		}
		s = s[len(s)-(MaxSourceBytes-head):]
	}
	return m.scanPart(s)
}

func (m *matcher) scanPart(s string) bool {
	if m.pending == 0 || m.budget <= 0 {
		return false
	}
	if len(s) > m.budget {
		s = s[:m.budget]
	}
	m.budget -= len(s)
	return lexSource(s, true, m.visit) && m.budget > 0
}

// visit marks the atoms a source value stands for as found.
func (m *matcher) visit(v, _ float64) bool {
	for _, a := range m.idx.lookup(v) {
		if !a.verified {
			a.verified = true
			m.pending--
		}
	}
	return m.pending > 0
}

// itemVerified reports whether every atom of one of the item's readings
// is found.
func (m *matcher) itemVerified(it *item) bool {
	for _, alt := range it.alts {
		ok := true
		for k := range alt {
			ok = ok && alt[k].verified
		}
		if ok {
			return true
		}
	}
	return false
}

func (m *matcher) unverifiedItems() int {
	n := 0
	for i := range m.items {
		if !m.itemVerified(&m.items[i]) {
			n++
		}
	}
	return n
}

// An operand is a number a derived number may come from, as the interval
// it stands for. item is the answer's item it belongs to, or fromQuestion
// or constant.
type operand struct {
	lo, hi float64
	item   int
}

const (
	fromQuestion = -1
	constant     = -2 // of operandConstants
	offset       = -3 // of offsetConstants
)

// derive marks as found the unfound atoms that are one step (+, −, ×, ÷)
// from two operands: the numbers the answer shows (other than the atom's
// own item; a percentage also as a fraction), the question's, and
// operandConstants, which only multiply or divide another operand.
// A derived number is compared as it is, or as a percentage when written
// as one, at the precision it is written to.
func (m *matcher) derive(question []operand) {
	type tgt struct {
		a    *atom
		item int
		// the intervals it accepts (as is, and ×100 for a percentage):
		// lo, hi, and the widest derived interval
		iv [2][3]float64
		n  int
	}
	var targets []tgt
	var ops []operand
	add := func(o operand) {
		if len(ops) < maxOperands {
			ops = append(ops, o)
		}
	}
	// A number written twice is one item: "43.7 ... 43.7 again" is no
	// derivation.
	first := make(map[string]int)
	for i := range m.items {
		it := &m.items[i]
		verified := m.itemVerified(it)
		if _, ok := first[it.text]; !ok {
			first[it.text] = i
		}
		i := first[it.text]
		for a := range it.alts {
			for k := range it.alts[a] {
				at := &it.alts[a][k]
				// The other readings of an ambiguous number (45 of
				// $45k, 10.8 of C(10,8)) are for sources only.
				shown := a == 0 || a == 1 && it.parts
				if shown {
					add(operand{at.v - at.oq/2, at.v + at.oq/2, i})
					if at.pct {
						add(operand{(at.v - at.oq/2) / 100, (at.v + at.oq/2) / 100, i})
					}
				}
				if shown && !verified && !at.verified && len(targets) < maxDerivedTargets {
					t := tgt{a: at, item: i, n: 1}
					q := max(at.dq, minPrecision*at.v)
					lo, hi := at.v-q/2-q/1000, at.v+q-q/1000
					t.iv[0] = [3]float64{lo, hi, maxDerivedWidth * (hi - lo)}
					if at.pct {
						t.iv[1] = [3]float64{lo / 100, hi / 100, maxDerivedWidth * (hi - lo) / 100}
						t.n = 2
					}
					targets = append(targets, t)
				}
			}
		}
	}
	if len(targets) == 0 {
		return
	}
	for _, q := range question {
		add(q)
	}
	for _, c := range operandConstants {
		add(operand{c, c, constant})
	}
	for _, c := range offsetConstants {
		add(operand{c, c, offset})
	}
	left := len(targets)
	// try verifies the targets in [lo, hi], derived from x and y; step
	// is the smaller operand of a sum or difference, which must show at
	// the target's precision (1.08 billion is not 1,079,252,849 + 1).
	try := func(lo, hi float64, x, y *operand, step float64) {
		for t := range targets {
			tg := &targets[t]
			if tg.a.verified || x.item == tg.item || y.item == tg.item || step < tg.a.dq {
				continue
			}
			for _, iv := range tg.iv[:tg.n] {
				if lo < iv[1] && hi >= iv[0] && hi-lo <= iv[2] {
					tg.a.verified = true
					left--
					break
				}
			}
		}
	}
	for i := range ops {
		x := &ops[i]
		for j := range ops {
			if left == 0 {
				return
			}
			y := &ops[j]
			xc, yc := x.item <= constant, y.item <= constant
			if xc && yc {
				continue
			}
			sums := x.item != constant && y.item != constant
			products := x.item != offset && y.item != offset
			if j > i {
				if sums && x.lo > 0 && y.lo > 0 {
					try(x.lo+y.lo, x.hi+y.hi, x, y, min(x.hi, y.hi))
				}
				if products && !isOne(x) && !isOne(y) {
					try(x.lo*y.lo, x.hi*y.hi, x, y, math.Inf(1))
				}
			}
			if j == i {
				if !isOne(x) && !xc {
					try(x.lo*x.lo, x.hi*x.hi, x, x, math.Inf(1)) // r²
				}
				continue
			}
			if sums && y.lo > 0 && x.lo > 0 && x.hi >= y.lo {
				try(max(0, x.lo-y.hi), x.hi-y.lo, x, y, min(x.hi, y.hi))
			}
			if products && y.lo > 0 && !isOne(y) {
				try(x.lo/y.hi, x.hi/y.lo, x, y, math.Inf(1))
			}
		}
	}
}

func isOne(o *operand) bool { return o.lo == 1 && o.hi == 1 }

// questionNumbers returns the numbers of the question as operands.
func questionNumbers(q string) []operand {
	var ops []operand
	if len(q) > MaxSourceBytes {
		q = q[:MaxSourceBytes]
	}
	lexSource(q, false, func(v, quantum float64) bool {
		w := quantum
		if quantum >= 1 {
			w = 0 // integers are exact, $15k too
		}
		ops = append(ops, operand{v - w/2, v + w/2, fromQuestion})
		return len(ops) < maxQuestionNumbers
	})
	return ops
}

// An interval of source values [lo, hi) that verifies an atom.
type interval struct {
	lo, hi float64
	a      *atom
}

// index finds the atoms whose intervals hold a value: the intervals'
// ends, sorted, cut the line into segments, each with its atoms. Most
// values of a source are in no interval: a bitmap of coarse buckets
// (a float's exponent and first mantissa bits) turns them away first.
type index struct {
	edges  []float64
	owners [][]*atom // owners[k]: the atoms of [edges[k], edges[k+1])
	bucket [1 << (bucketBits - 6)]uint64
}

// bucketBits is how many high bits of a non-negative float64 name its
// bucket: 11 of exponent and 4 of mantissa, 16 buckets a binade.
const bucketBits = 15

func bucketOf(v float64) uint64 { return math.Float64bits(v) >> (63 - bucketBits) }

func buildIndex(ivs []interval) *index {
	if len(ivs) == 0 {
		return &index{}
	}
	edges := make([]float64, 0, 2*len(ivs))
	for _, iv := range ivs {
		edges = append(edges, iv.lo, iv.hi)
	}
	slices.Sort(edges)
	edges = slices.Compact(edges)
	owners := make([][]*atom, len(edges)-1)
	for _, iv := range ivs {
		k0, _ := slices.BinarySearch(edges, iv.lo)
		k1, _ := slices.BinarySearch(edges, iv.hi)
		for k := k0; k < k1; k++ {
			owners[k] = append(owners[k], iv.a)
		}
	}
	x := &index{edges: edges, owners: owners}
	for _, iv := range ivs {
		for b := bucketOf(max(iv.lo, 0)); b <= bucketOf(max(iv.hi, 0)); b++ {
			x.bucket[b>>6] |= 1 << (b & 63)
		}
	}
	return x
}

// lookup returns the atoms whose intervals hold v.
func (x *index) lookup(v float64) []*atom {
	e := x.edges
	if b := bucketOf(v); x.bucket[b>>6]&(1<<(b&63)) == 0 || len(e) == 0 || v < e[0] || v >= e[len(e)-1] {
		return nil
	}
	lo, hi := 0, len(e)-1 // e[lo] <= v < e[hi]
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if e[mid] <= v {
			lo = mid
		} else {
			hi = mid
		}
	}
	return x.owners[lo]
}
