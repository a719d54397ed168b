package twin

import "math"

// Small dense linear algebra for the four-coefficient fit: nothing here
// needs more than a 4×4 matrix.

func newMat(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	return m
}

// invert returns the inverse of a symmetric positive-definite matrix by
// Gauss–Jordan elimination with partial pivoting; ok is false when it is
// singular.
func invert(a [][]float64) ([][]float64, bool) {
	n := len(a)
	m := newMat(n)
	inv := newMat(n)
	for i := range a {
		copy(m[i], a[i])
		inv[i][i] = 1
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		if m[p][c] == 0 || math.IsNaN(m[p][c]) {
			return nil, false
		}
		m[c], m[p] = m[p], m[c]
		inv[c], inv[p] = inv[p], inv[c]
		d := m[c][c]
		for j := range n {
			m[c][j] /= d
			inv[c][j] /= d
		}
		for r := range n {
			if r == c || m[r][c] == 0 {
				continue
			}
			f := m[r][c]
			for j := range n {
				m[r][j] -= f * m[c][j]
				inv[r][j] -= f * inv[c][j]
			}
		}
	}
	return inv, true
}

func mul(a, b [][]float64) [][]float64 {
	n := len(a)
	out := newMat(n)
	for i := range n {
		for j := range n {
			var s float64
			for k := range n {
				s += a[i][k] * b[k][j]
			}
			out[i][j] = s
		}
	}
	return out
}

// eigenSym returns the eigenvalues and eigenvectors (as columns) of a
// symmetric matrix by Jacobi rotations.
func eigenSym(a [][]float64) (vals []float64, vecs [][]float64) {
	n := len(a)
	m := newMat(n)
	vecs = newMat(n)
	for i := range n {
		copy(m[i], a[i])
		vecs[i][i] = 1
	}
	for sweep := 0; sweep < 100; sweep++ {
		off := 0.0
		for i := range n {
			for j := i + 1; j < n; j++ {
				off += m[i][j] * m[i][j]
			}
		}
		if off < 1e-30 {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				if math.Abs(m[p][q]) < 1e-300 {
					continue
				}
				theta := (m[q][q] - m[p][p]) / (2 * m[p][q])
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range n {
					mkp, mkq := m[k][p], m[k][q]
					m[k][p] = c*mkp - s*mkq
					m[k][q] = s*mkp + c*mkq
				}
				for k := range n {
					mpk, mqk := m[p][k], m[q][k]
					m[p][k] = c*mpk - s*mqk
					m[q][k] = s*mpk + c*mqk
				}
				for k := range n {
					vkp, vkq := vecs[k][p], vecs[k][q]
					vecs[k][p] = c*vkp - s*vkq
					vecs[k][q] = s*vkp + c*vkq
				}
			}
		}
	}
	vals = make([]float64, n)
	for i := range n {
		vals[i] = m[i][i]
	}
	return vals, vecs
}
