package chart

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendPadding is the room between legend entries: gonum's default (none)
// sets their text boxes on one another.
const legendPadding = vg.Length(2.5)

// pointLabels names points without overprinting: each label goes beside
// its point in the first of eight places (right, left, above, below, then
// the corners) where it covers no other label, no point and nothing
// outside the data area or under the legend; a label with no such place
// is left out and counted in *omitted, for a sentence under the plot.
type pointLabels struct {
	xys    plotter.XYs
	labels []string
	style  draw.TextStyle
	radius vg.Length // of the points' glyphs
	// legendRows is how many legend entries sit at the top of the data
	// area: the band they take is kept free.
	legendRows int
	legend     draw.TextStyle
	omitted    *int
}

// Plot implements plot.Plotter.
func (pl *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	taken := make([]vg.Rectangle, 0, 2*len(pl.xys))
	gap := vg.Points(2)
	for _, xy := range pl.xys {
		x, y := trX(xy.X), trY(xy.Y)
		r := pl.radius
		taken = append(taken, vg.Rectangle{Min: vg.Point{X: x - r, Y: y - r}, Max: vg.Point{X: x + r, Y: y + r}})
	}
	free := c.Rectangle
	if pl.legendRows > 0 {
		free.Max.Y -= vg.Length(pl.legendRows) * (pl.legend.Height("Xg") + legendPadding)
	}
	*pl.omitted = 0
	for i, xy := range pl.xys {
		x, y := trX(xy.X), trY(xy.Y)
		w, h := pl.style.Width(pl.labels[i]), pl.style.Height(pl.labels[i])
		d := pl.radius + gap
		var placed bool
		for _, at := range []vg.Point{
			{X: x + d, Y: y - h/2}, {X: x - d - w, Y: y - h/2}, {X: x - w/2, Y: y + d}, {X: x - w/2, Y: y - d - h},
			{X: x + d, Y: y + d/2}, {X: x + d, Y: y - d/2 - h}, {X: x - d - w, Y: y + d/2}, {X: x - d - w, Y: y - d/2 - h},
		} {
			box := vg.Rectangle{Min: at, Max: vg.Point{X: at.X + w, Y: at.Y + h}}
			if !inside(box, free) || overlapsAny(box, taken) {
				continue
			}
			c.FillText(pl.style, at, pl.labels[i])
			taken = append(taken, box)
			placed = true
			break
		}
		if !placed {
			*pl.omitted++
		}
	}
}

// inside reports whether a lies within b.
func inside(a, b vg.Rectangle) bool {
	return a.Min.X >= b.Min.X && a.Max.X <= b.Max.X && a.Min.Y >= b.Min.Y && a.Max.Y <= b.Max.Y
}

// overlapsAny reports whether a overlaps any of rs.
func overlapsAny(a vg.Rectangle, rs []vg.Rectangle) bool {
	for _, b := range rs {
		if a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y {
			return true
		}
	}
	return false
}
