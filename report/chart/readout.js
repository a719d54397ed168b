
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var FONT = '"Liberation Sans", Arial, Helvetica, sans-serif';
  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1000) return Math.round(v).toLocaleString("en-US");
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    if (a === 0) return "0";
    return v.toPrecision(3);
  }
  // Where v falls in [lo, hi], 0 to 1, on a linear or log axis, and back.
  function frac(v, lo, hi, log) {
    return log ? (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) : (v - lo) / (hi - lo);
  }
  function at(f, lo, hi, log) {
    return log ? Math.exp(Math.log(lo) + f * (Math.log(hi) - Math.log(lo))) : lo + f * (hi - lo);
  }
  // About six round ticks between lo and hi, each {v, s}: 1, 2 or 5 ×
  // 10ⁿ apart, labelled with the decimals the step needs; or powers of
  // ten (with 2 and 5 between when few) on a log axis.
  function ticks(lo, hi, log, integer) {
    var out = [], k, v;
    function label(v, decimals) {
      return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en-US") : v.toFixed(decimals);
    }
    if (log) {
      for (k = Math.floor(Math.log10(lo)); Math.pow(10, k) <= hi; k++) {
        [1, 2, 5].forEach(function (m) {
          v = m * Math.pow(10, k);
          if (v >= lo && v <= hi) out.push({v: v, s: label(v, Math.max(0, -k)), decade: m === 1});
        });
      }
      var decades = out.filter(function (t) { return t.decade; });
      return decades.length >= 3 ? decades : out;
    }
    var raw = (hi - lo) / 6, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = mag;
    [1, 2, 5, 10].some(function (m) { step = m * mag; return step >= raw; });
    if (integer) step = Math.max(step, 1);
    var decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    for (k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) {
      v = k * step;
      out.push({v: v, s: label(v === 0 ? 0 : v, decimals)});
    }
    return out;
  }
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, s, attrs) {
    var t = el("text", Object.assign({x: x, y: y, "font-family": FONT, "font-size": 10, fill: "#000"}, attrs || {}), parent);
    t.textContent = s;
    return t;
  }

  document.querySelectorAll("figure[data-panels]").forEach(function (fig) {
    var panels = JSON.parse(fig.dataset.panels || "[]");
    var svg = fig.querySelector("svg");
    var tip = fig.querySelector(".readout");
    if (!svg || !tip) return;
    panels.forEach(function (p) {
      p.v = {x0: p.x0, x1: p.x1, y0: p.y0, y1: p.y1};
      // Counts (requests, preemptions) get whole-number ticks.
      p.yi = (p.s || []).every(function (s) {
        return s.p.every(function (v, i) { return i % 2 === 0 || v === Math.round(v); });
      });
    });
    var hover = null;
    function toSVG(clientX, clientY) {
      var pt = svg.createSVGPoint();
      pt.x = clientX; pt.y = clientY;
      return pt.matrixTransform(svg.getScreenCTM().inverse());
    }
    // panelAt is the panel under q: its data area, and for categories
    // (whose bars reach past it) a margin either side.
    function panelAt(q) {
      return panels.find(function (p) {
        var m = p.xc ? 12 + Math.max.apply(null, (p.s || []).map(function (s) { return Math.abs(s.o || 0); })) : 0;
        return q.x >= p.l - m && q.x <= p.r + m && q.y >= p.t && q.y <= p.b;
      });
    }
    function X(p, x) { return p.l + frac(x, p.v.x0, p.v.x1, p.xl) * (p.r - p.l); }
    function Y(p, y) { return p.b - frac(y, p.v.y0, p.v.y1, p.yl) * (p.b - p.t); }
    function shown(p, x, y) {
      return x >= p.v.x0 && x <= p.v.x1 && y >= p.v.y0 && y <= p.v.y1 && (!p.xl || x > 0) && (!p.yl || y > 0);
    }
    // The data point nearest q on panel p (within 40 points), or null.
    function nearest(p, q) {
      var best = null, bd = 40 * 40;
      (p.s || []).forEach(function (s) {
        for (var i = 0; i + 1 < s.p.length; i += 2) {
          var x = s.p[i], y = s.p[i + 1];
          if (!shown(p, x, y)) continue;
          var dx = X(p, x) + (s.o || 0) - q.x, dy = Y(p, y) - q.y, d = dx * dx + dy * dy;
          if (d < bd) { bd = d; best = {s: s, x: x, y: y}; }
        }
      });
      return best;
    }
    // The readout: the nearest point's series and values, marked by a ring.
    fig.readout = function (clientX, clientY) {
      var q = toSVG(clientX, clientY), p = panelAt(q), n = p && nearest(p, q);
      if (hover) { hover.remove(); hover = null; }
      if (!n) { tip.style.display = "none"; return ""; }
      var parts = [];
      if (n.s.n) parts.push(n.s.n);
      if (p.xc) parts.push(p.xc[Math.round(n.x)]);
      else if (p.xn) parts.push(p.xn + " " + fmt(n.x));
      if (p.yn) parts.push(p.yn + " " + fmt(n.y));
      tip.textContent = parts.join(" · ");
      hover = el("circle", {cx: X(p, n.x) + (n.s.o || 0), cy: Y(p, n.y), r: 4, fill: "none", stroke: "#000", "stroke-width": 1.2, "class": "hover"}, svg);
      var box = fig.getBoundingClientRect();
      tip.style.left = (clientX - box.left + 14) + "px";
      tip.style.top = (clientY - box.top + 14) + "px";
      tip.style.display = "block";
      return tip.textContent;
    };
    // redraw draws panel p over the picture at its view: its axes with
    // ticks for the range shown, its grid, its series and their names.
    function redraw(p) {
      if (p.g) p.g.remove();
      var g = p.g = el("g", {"class": "zoomed-panel"}, svg);
      el("rect", {x: p.ol, y: p.t - 4, width: p.r - p.ol + 6, height: p.ob - p.t + 4, fill: "#fff"}, g);
      el("rect", {x: p.ol, y: p.t - 7, width: p.l - p.ol, height: 7, fill: "#fff"}, g); // the top tick's label

      ticks(p.v.x0, p.v.x1, p.xl).forEach(function (t) {
        var x = X(p, t.v);
        el("line", {x1: x, x2: x, y1: p.t, y2: p.b, stroke: "#ddd"}, g);
        text(g, x, p.b + 13, t.s, {"text-anchor": "middle", "class": "tick-x"});
      });
      ticks(p.v.y0, p.v.y1, p.yl, p.yi).forEach(function (t) {
        var y = Y(p, t.v);
        el("line", {x1: p.l, x2: p.r, y1: y, y2: y, stroke: "#ddd"}, g);
        text(g, p.l - 5, y + 3.5, t.s, {"text-anchor": "end", "class": "tick-y"});
      });
      el("path", {d: "M" + p.l + " " + p.t + "V" + p.b + "H" + p.r, stroke: "#000", fill: "none"}, g);
      stages(p, g);
      if (p.yt) text(g, p.ol + 10, (p.t + p.b) / 2, p.yt, {transform: "rotate(-90 " + (p.ol + 10) + " " + (p.t + p.b) / 2 + ")", "text-anchor": "middle", "font-size": 11});
      if (p.xt) text(g, (p.l + p.r) / 2, p.ob - 3, p.xt, {"text-anchor": "middle", "font-size": 11});
      // A nested svg clips the series to the data area.
      var box = [p.l, p.t, p.r - p.l, p.b - p.t].join(" ");
      var data = el("svg", {x: p.l, y: p.t, width: p.r - p.l, height: p.b - p.t, viewBox: box, overflow: "hidden"}, g), names = [];
      (p.s || []).forEach(function (s) {
        var d = "";
        for (var i = 0; i + 1 < s.p.length; i += 2) {
          var x = s.p[i], y = s.p[i + 1];
          if ((p.xl && x <= 0) || (p.yl && y <= 0)) continue;
          if (s.k === "dots") d += "M" + (X(p, x) - 1.6) + " " + Y(p, y) + "a1.6 1.6 0 1 0 3.2 0a1.6 1.6 0 1 0 -3.2 0";
          else d += (d ? "L" : "M") + X(p, x) + " " + Y(p, y);
        }
        var dots = s.k === "dots";
        el("path", {d: d, fill: dots ? s.c : "none", stroke: dots ? "none" : s.c, "stroke-width": 1.5,
          "stroke-dasharray": s.k === "dash" ? "5 3" : "none", "class": "series"}, data);
        if (s.n && names.indexOf(s.n) < 0) names.push(s.n, s.c);
      });
      for (var i = 0; i < names.length; i += 2) {
        var y = p.t + 12 + 6 * i;
        el("rect", {x: p.l + 6, y: y - 7, width: 10, height: 8, fill: names[i + 1]}, g);
        text(g, p.l + 20, y, names[i], {"font-size": 9});
      }
    }
    // fit sets p's y range to the data in its x range, leaving room at
    // the top for its series' names.
    function fit(p) {
      var lo = Infinity, hi = -Infinity, rows = 0;
      (p.s || []).forEach(function (s) {
        if (s.n) rows++;
        for (var i = 0; i + 1 < s.p.length; i += 2) {
          var x = s.p[i], y = s.p[i + 1];
          if (x < p.v.x0 || x > p.v.x1 || (p.yl && y <= 0)) continue;
          lo = Math.min(lo, y); hi = Math.max(hi, y);
        }
      });
      if (!(hi >= lo)) return;
      var f = Math.min(0.6, (12 * rows + 10) / (p.b - p.t));
      if (p.yl) {
        var l0 = Math.log(lo / 1.3), l1 = Math.log(hi * 1.3);
        p.v.y0 = Math.max(Math.exp(l0), p.y0); p.v.y1 = Math.min(Math.exp(l1 + (l1 - l0) * f / (1 - f)), p.y1);
        return;
      }
      var y0 = p.y0 === 0 && lo >= 0 ? 0 : lo - 0.05 * (hi - lo || Math.abs(hi) || 1);
      if (hi === y0) hi = y0 + 1;
      // Within the whole plot's range: a share stays at most 100 %.
      p.v.y0 = Math.max(y0, p.y0); p.v.y1 = Math.min(hi + (hi - y0) * f / (1 - f), p.y1);
    }
    // stages draws where each stage after the first begins, and on the
    // last panel the stages' names under the axis, at the panel's view.
    function stages(p, g) {
      (p.st || []).forEach(function (st, i) {
        var x = X(p, st.a);
        if (i > 0 && x > p.l && x < p.r) el("line", {x1: x, x2: x, y1: p.t, y2: p.b, stroke: "#999", "stroke-dasharray": "1 3"}, g);
      });
      if (!p.bt) return;
      el("rect", {x: p.l - 4, y: p.bt, width: p.r - p.l + 8, height: p.bb - p.bt, fill: "#fff"}, g);
      (p.st || []).forEach(function (st) {
        var a = Math.max(X(p, st.a), p.l), b = Math.min(X(p, st.b), p.r);
        if (b - a < 6) return;
        el("path", {d: "M" + (a + 2) + " " + (p.bt + 4) + "H" + (b - 2) + "M" + (a + 2) + " " + (p.bt + 2) + "v6M" + (b - 2) + " " + (p.bt + 2) + "v6",
          stroke: "#969696", "stroke-width": 0.8, fill: "none"}, g);
        text(g, (a + b) / 2, p.bt + 15, "stage " + st.n, {"text-anchor": "middle", "font-size": 9, "class": "stage"});
      });
    }
    // zoom scales the x axis of the panel under the pointer about it by
    // factor (below 1 closer), and of every panel that shares it, fits
    // their y axes to the data shown and redraws them; it reports whether
    // anything zoomed.
    fig.zoom = function (clientX, clientY, factor) {
      var q = toSVG(clientX, clientY), p = panelAt(q);
      if (!p || !p.xn || p.xc) return false;
      var c = at((q.x - p.l) / (p.r - p.l), p.v.x0, p.v.x1, p.xl), lo = p.v.x0, hi = p.v.x1;
      var xr = p.xl ? [Math.exp(Math.log(c) - (Math.log(c) - Math.log(lo)) * factor), Math.exp(Math.log(c) + (Math.log(hi) - Math.log(c)) * factor)]
        : [c - (c - lo) * factor, c + (hi - c) * factor];
      panels.forEach(function (o) {
        if (o !== p && (o.xn !== p.xn || o.xc || o.x0 !== p.x0 || o.x1 !== p.x1)) return;
        o.v.x0 = xr[0]; o.v.x1 = xr[1];
        fit(o);
        redraw(o);
      });
      return true;
    };
    fig.unzoom = function () {
      panels.forEach(function (p) {
        if (p.g) { p.g.remove(); p.g = null; }
        p.v = {x0: p.x0, x1: p.x1, y0: p.y0, y1: p.y1};
      });
    };
    svg.addEventListener("mousemove", function (e) { fig.readout(e.clientX, e.clientY); });
    svg.addEventListener("mouseleave", function () {
      tip.style.display = "none";
      if (hover) { hover.remove(); hover = null; }
    });
    svg.addEventListener("wheel", function (e) {
      if (!fig.classList.contains("zoomed")) return;
      if (fig.zoom(e.clientX, e.clientY, e.deltaY < 0 ? 0.8 : 1.25)) e.preventDefault();
    }, {passive: false});
    svg.addEventListener("dblclick", function (e) { e.stopPropagation(); fig.unzoom(); });
    fig.addEventListener("click", function () {
      if (!fig.classList.toggle("zoomed")) fig.unzoom();
    });
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") document.querySelectorAll("figure.zoomed").forEach(function (f) { f.click(); });
  });
})();
