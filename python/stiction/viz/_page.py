"""The HTML page of :mod:`stiction.viz`: meshcat's three.js viewer bundle (read from the
installed ``meshcat`` package and inlined), the trajectory data and a small player
(play/pause, time slider, speed, URL parameters ``t``, ``play`` and ``bench``)."""

import importlib.util
import json
import os

__all__ = ["meshcat_bundle", "render_page"]


def meshcat_bundle():
    """The text of meshcat's viewer bundle (``meshcat/viewer/dist/main.min.js``), which
    defines ``MeshCat.Viewer`` and ``MeshCat.THREE`` (three.js r132).

    :raises ImportError: the ``meshcat`` package is not installed.
    """
    spec = importlib.util.find_spec("meshcat")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("stiction.viz writes pages with the viewer bundle of the meshcat package: "
                          "pip install meshcat")
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "viewer", "dist", "main.min.js")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise ImportError("the installed meshcat package has no viewer/dist/main.min.js; reinstall meshcat")


_STYLE = """
html, body { margin: 0; height: 100%; background: #f4f5f7; font-family: sans-serif; overflow: hidden; }
#meshcat-pane { width: 100vw; height: 100vh; overflow: hidden; }
#stiction-bar { position: absolute; left: 0; right: 0; bottom: 0; display: flex; gap: 10px; align-items: center;
  padding: 6px 12px; background: rgba(255, 255, 255, 0.85); font-size: 13px; }
#stiction-bar input[type=range] { flex: 1; }
#stiction-play { width: 64px; }
#stiction-title { position: absolute; left: 12px; top: 8px; font-size: 14px; color: #333; }
"""

_PLAYER = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("stiction-data").textContent);
  var THREE = MeshCat.THREE;
  function decode(a) {
    var bin = atob(a.b64), u8 = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    if (a.dtype === "uint32") return new Uint32Array(u8.buffer);
    return new Float32Array(u8.buffer);
  }
  var params = new URLSearchParams(window.location.search);
  // ?aa=0 turns antialiasing off (cheaper with software rendering).
  var pane = document.getElementById("meshcat-pane");
  var renderer = new THREE.WebGLRenderer({antialias: params.get("aa") !== "0", alpha: true});
  pane.appendChild(renderer.domElement);
  var viewer = new MeshCat.Viewer(pane, true, renderer);
  window.stictionViewer = viewer;
  viewer.hide_background();
  viewer.set_property(["Axes"], "visible", false);
  viewer.set_property(["Grid"], "visible", false);
  var times = decode(D.times), T = times.length, tEnd = times[T - 1];
  var poses = D.num_tracks > 0 ? decode(D.poses) : new Float32Array(0), M = D.num_tracks;
  var view = D.view;
  function mat(c, opacity) {
    return new THREE.MeshPhongMaterial({color: new THREE.Color(c[0], c[1], c[2]), transparent: opacity < 1,
      opacity: opacity, side: THREE.DoubleSide, flatShading: true});
  }
  function capsule(a, b, r, m) {
    var g = new THREE.Group(), d = new THREE.Vector3().subVectors(b, a), len = d.length();
    var cyl = new THREE.Mesh(new THREE.CylinderGeometry(r, r, len, 24), m);
    cyl.position.addVectors(a, b).multiplyScalar(0.5);
    if (len > 0) cyl.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), d.normalize());
    g.add(cyl);
    [a, b].forEach(function (p) { var s = new THREE.Mesh(new THREE.SphereGeometry(r, 16, 8), m); s.position.copy(p); g.add(s); });
    return g;
  }
  function build(s) {
    var m = mat(s.color, s.opacity);
    if (s.kind === "plane") {
      var size = Math.max(4 * view.radius, 2);
      return new THREE.Mesh(new THREE.PlaneGeometry(size, size), mat(s.color, Math.min(s.opacity, 0.35)));
    }
    var v = decode(s.vertices), n = v.length / 3, r = s.radius > 0 ? s.radius : view.point_radius;
    if (n === 1) {
      var sp = new THREE.Mesh(new THREE.SphereGeometry(r, 24, 12), m);
      sp.position.set(v[0], v[1], v[2]);
      return sp;
    }
    if (n === 2) return capsule(new THREE.Vector3(v[0], v[1], v[2]), new THREE.Vector3(v[3], v[4], v[5]), r, m);
    var t = decode(s.triangles), pos = new Float32Array(t.length * 3);
    for (var k = 0; k < t.length; k++) for (var j = 0; j < 3; j++) pos[3 * k + j] = v[3 * t[k] + j];
    var geo = new THREE.BufferGeometry();
    geo.setAttribute("position", new THREE.BufferAttribute(pos, 3));
    geo.computeVertexNormals();
    return new THREE.Mesh(geo, m);
  }
  function setPose(obj, p) {
    obj.position.set(p[0], p[1], p[2]);
    obj.quaternion.set(p[4], p[5], p[6], p[3]);
  }
  // A ground grid at z = 0 sized to the scene (1, 2 or 5 × 10^k metres per cell).
  (function () {
    var size = 4 * view.radius, cell = Math.pow(10, Math.floor(Math.log10(size / 10)));
    if (size / cell > 50) cell *= 5; else if (size / cell > 20) cell *= 2;
    var n = Math.max(2, Math.ceil(size / cell));
    var grid = new THREE.GridHelper(n * cell, n, 0x999999, 0xcccccc);
    grid.rotation.x = Math.PI / 2;
    grid.position.set(Math.round(view.center[0] / cell) * cell, Math.round(view.center[1] / cell) * cell, 0);
    viewer.set_object(["stiction", "grid"], grid);
  })();
  var movers = [];
  D.shapes.forEach(function (s, k) {
    var obj = build(s);
    viewer.set_object(["stiction", s.name || ("shape" + k)], obj);
    var local = {p: new THREE.Vector3(s.local[0], s.local[1], s.local[2]),
                 q: new THREE.Quaternion(s.local[4], s.local[5], s.local[6], s.local[3])};
    if (s.track < 0) { obj.position.copy(local.p); obj.quaternion.copy(local.q); }
    else movers.push({obj: obj, track: s.track, local: local});
  });
  var surfaces = D.surfaces.map(function (s, k) {
    var tri = decode(s.triangles), X = decode(s.positions), n = s.num_vertices;
    var geo = new THREE.BufferGeometry();
    var pos = new THREE.BufferAttribute(new Float32Array(3 * n), 3);
    geo.setAttribute("position", pos);
    geo.setIndex(new THREE.BufferAttribute(new Uint32Array(tri), 1));
    var obj = new THREE.Mesh(geo, mat(s.color, s.opacity));
    viewer.set_object(["stiction", s.name || ("surface" + k)], obj);
    return {geo: geo, pos: pos, X: X, n: n};
  });
  D.markers.forEach(function (s, k) {
    var obj = new THREE.Mesh(new THREE.SphereGeometry(s.radius, 24, 12), mat(s.color, s.opacity));
    obj.position.set(s.position[0], s.position[1], s.position[2]);
    viewer.set_object(["stiction", s.name || ("marker" + k)], obj);
  });
  if (D.frames) {
    // Body-frame axes: x red, y green, z blue (unlit rods from the frame's origin).
    var L = D.frames.length, rod = new THREE.CylinderGeometry(L / 30, L / 30, L, 8);
    rod.translate(0, L / 2, 0);
    var axes = [[0xff0000, [0, 0, -Math.PI / 2]], [0x00ff00, [0, 0, 0]], [0x0000ff, [Math.PI / 2, 0, 0]]];
    D.frames.tracks.forEach(function (tr) {
      var ax = new THREE.Group();
      axes.forEach(function (a) {
        var m = new THREE.Mesh(rod, new THREE.MeshBasicMaterial({color: a[0]}));
        m.rotation.set(a[1][0], a[1][1], a[1][2]);
        ax.add(m);
      });
      viewer.set_object(["stiction", "frames", "track" + tr], ax);
      movers.push({obj: ax, track: tr, local: {p: new THREE.Vector3(), q: new THREE.Quaternion()}});
    });
  }
  var contacts = null;
  if (D.contacts) {
    var counts = decode(D.contacts.counts), data = decode(D.contacts.data), offsets = new Uint32Array(T + 1), most = 0;
    for (var i = 0; i < T; i++) { offsets[i + 1] = offsets[i] + counts[i]; most = Math.max(most, counts[i]); }
    var pg = new THREE.BufferGeometry(), lg = new THREE.BufferGeometry();
    pg.setAttribute("position", new THREE.BufferAttribute(new Float32Array(3 * Math.max(most, 1)), 3));
    lg.setAttribute("position", new THREE.BufferAttribute(new Float32Array(6 * Math.max(most, 1)), 3));
    var pts = new THREE.Points(pg, new THREE.PointsMaterial({color: 0xd62728, size: 7, sizeAttenuation: false, depthTest: false}));
    var lines = new THREE.LineSegments(lg, new THREE.LineBasicMaterial({color: 0xd62728, depthTest: false}));
    pts.renderOrder = lines.renderOrder = 10;
    viewer.set_object(["stiction", "contact points"], pts);
    viewer.set_object(["stiction", "contact normals"], lines);
    contacts = {counts: counts, data: data, offsets: offsets, pg: pg, lg: lg};
  }
  var qa = new THREE.Quaternion();
  function pose(i) {
    var base = i * M * 7;
    movers.forEach(function (m) {
      var o = base + 7 * m.track;
      qa.set(poses[o + 4], poses[o + 5], poses[o + 6], poses[o + 3]);
      m.obj.quaternion.copy(qa).multiply(m.local.q);
      m.obj.position.copy(m.local.p).applyQuaternion(qa);
      m.obj.position.x += poses[o]; m.obj.position.y += poses[o + 1]; m.obj.position.z += poses[o + 2];
    });
    surfaces.forEach(function (s) {
      s.pos.array.set(s.X.subarray(3 * s.n * i, 3 * s.n * (i + 1)));
      s.pos.needsUpdate = true;
      s.geo.computeVertexNormals();
      s.geo.computeBoundingSphere();
    });
    if (contacts) {
      var c = contacts, n = c.counts[i], o = c.offsets[i], P = c.pg.attributes.position.array, L = c.lg.attributes.position.array;
      for (var k = 0; k < n; k++) {
        for (var j = 0; j < 3; j++) {
          var p = c.data[6 * (o + k) + j], nn = c.data[6 * (o + k) + 3 + j];
          P[3 * k + j] = p; L[6 * k + j] = p; L[6 * k + 3 + j] = p + view.normal_length * nn;
        }
      }
      c.pg.attributes.position.needsUpdate = c.lg.attributes.position.needsUpdate = true;
      c.pg.setDrawRange(0, n); c.lg.setDrawRange(0, 2 * n);
      c.pg.computeBoundingSphere(); c.lg.computeBoundingSphere();
    }
    viewer.set_dirty();
  }
  // Camera: look at the scene's centre from the front-right, above.
  var c = view.center, d = new THREE.Vector3(1.0, -1.6, 0.8).normalize();
  var dist = 0.9 * view.radius / Math.sin((viewer.camera.fov || 75) * Math.PI / 360);
  var eye = [c[0] + dist * d.x, c[1] + dist * d.y, c[2] + dist * d.z];
  viewer.camera.position.set(eye[0], eye[2], -eye[1]);
  viewer.camera.far = Math.max(100, 20 * dist);
  viewer.camera.near = Math.min(0.01, dist / 100);
  viewer.controls.target.set(c[0], c[2], -c[1]);
  viewer.controls.update();

  var slider = document.getElementById("stiction-slider"), label = document.getElementById("stiction-time");
  var button = document.getElementById("stiction-play"), speedSel = document.getElementById("stiction-speed");
  var loop = document.getElementById("stiction-loop");
  slider.max = T - 1;
  var frame = -1, t = 0, playing = false, last = null;
  function frameAt(time) {
    var lo = 0, hi = T - 1;
    while (lo < hi) { var mid = (lo + hi + 1) >> 1; if (times[mid] <= time) lo = mid; else hi = mid - 1; }
    return lo;
  }
  function show(i) {
    frame = i;
    pose(i);
    slider.value = i;
    label.textContent = "t = " + times[i].toFixed(3) + " s / " + tEnd.toFixed(3) + " s";
  }
  function setPlaying(p) { playing = p; last = null; button.textContent = p ? "pause" : "play"; }
  button.onclick = function () { if (!playing && t >= tEnd) t = 0; setPlaying(!playing); };
  slider.oninput = function () { t = times[+slider.value]; show(+slider.value); };
  document.addEventListener("keydown", function (e) { if (e.code === "Space") { e.preventDefault(); button.onclick(); } });
  function tick(now) {
    if (playing) {
      if (last !== null) t += (now - last) / 1000 * (+speedSel.value);
      last = now;
      if (t >= tEnd) { if (loop.checked && tEnd > 0) t = t % tEnd; else { t = tEnd; setPlaying(false); } }
      var i = frameAt(t);
      if (i !== frame) show(i);
    }
    requestAnimationFrame(tick);
  }
  var t0 = params.get("t");
  if (t0 === "end") t = tEnd; else if (t0 !== null && isFinite(+t0)) t = Math.min(Math.max(+t0, 0), tEnd);
  show(frameAt(t));
  var bench = +(params.get("bench") || 0);
  if (bench > 0) {
    // Frame time: pose + render + a 1-pixel read-back (waits for the GPU), per frame.
    var gl = viewer.renderer.getContext(), px = new Uint8Array(4), dts = [];
    for (var k = 0; k < bench; k++) {
      var s0 = performance.now();
      pose(k % T); viewer.render(); gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
      dts.push(performance.now() - s0);
    }
    dts.sort(function (a, b) { return a - b; });
    var mean = dts.reduce(function (a, b) { return a + b; }, 0) / dts.length;
    document.title = "stiction-bench frames=" + bench + " mean_ms=" + mean.toFixed(3) + " p95_ms=" +
      dts[Math.floor(0.95 * (dts.length - 1))].toFixed(3) + " max_ms=" + dts[dts.length - 1].toFixed(3);
    show(frameAt(t));
  }
  if (D.live) {
    // Served by Viewer.serve: reload when the trajectory changes (keeping the time on the slider).
    setInterval(function () {
      fetch("version", {cache: "no-store"}).then(function (r) { return r.ok ? r.text() : null; }).then(function (v) {
        if (v !== null && v !== D.live.version) window.location.reload();
      }).catch(function () {});
    }, 1000);
  }
  setPlaying(t0 === null && params.get("play") !== "0" && T > 1 && bench === 0);
  requestAnimationFrame(tick);
  document.body.setAttribute("data-stiction-ready", "1");
})();
"""


def render_page(payload):
    """The HTML text of a page showing ``payload`` (the encoded scene of
    :meth:`stiction.viz.Viewer.to_dict`)."""
    data = json.dumps(payload, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    title = str(payload.get("title") or "stiction")
    esc = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    speeds = "".join(f'<option value="{s}"{" selected" if s == 1 else ""}>{s}×</option>'
                     for s in (0.1, 0.25, 0.5, 1, 2, 4))
    bundle = meshcat_bundle()
    if "</script" in bundle.lower():  # pragma: no cover - the bundle never contains it
        raise RuntimeError("the meshcat bundle cannot be inlined (it contains </script>)")
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{esc}</title><style>{_STYLE}</style></head><body>\n",
        "<div id=\"meshcat-pane\"></div>\n",
        f"<div id=\"stiction-title\">{esc}</div>\n",
        "<div id=\"stiction-bar\"><button id=\"stiction-play\">play</button>",
        "<input id=\"stiction-slider\" type=\"range\" min=\"0\" max=\"0\" step=\"1\" value=\"0\">",
        "<span id=\"stiction-time\"></span>",
        f"<label>speed <select id=\"stiction-speed\">{speeds}</select></label>",
        "<label><input id=\"stiction-loop\" type=\"checkbox\" checked> loop</label></div>\n",
        "<script>", bundle, "</script>\n",
        "<script id=\"stiction-data\" type=\"application/json\">", data, "</script>\n",
        "<script>", _PLAYER, "</script>\n</body></html>\n",
    ])
