"""Trajectories as self-contained web pages (docs/viz.md).

``Viewer(model_or_world)`` builds a scene from the collision shapes of a :class:`~stiction.Model`
(or its URDF/MJCF visual shapes where it has some; bodies without shapes are drawn as
inertia-equivalent boxes on a skeleton), of a :class:`~stiction.World` (articulations,
particles, static geometry; soft bodies as their surface triangles moving with their
vertices) or of a :class:`~stiction.SoftBody`; overlays: contacts, body frames
(:meth:`Viewer.show_frames`), markers; :meth:`Viewer.animate` takes a rollout,
:meth:`Viewer.show` one configuration; :meth:`Viewer.save_html` writes one HTML file with
the three.js viewer of the ``meshcat`` package inlined (no network needed to open it), with
play/pause, a time slider and a speed control::

    from stiction.viz import Viewer
    viewer = Viewer(model)
    viewer.animate(Q, dt=1e-2)          # Q: (T, nq), row k at time k·dt
    viewer.add_target([0.4, 0.1, 0.6])
    viewer.save_html("rollout.html")

The scene also saves as a trajectory JSON file (:meth:`Viewer.save_json`, format
``stiction-trajectory`` version 1, docs/viz.md) that ``python -m stiction.viz FILE.json -o
out.html`` turns into a page; such a file may instead name a model and its configurations.
:meth:`Viewer.serve` serves a live page on localhost (it reloads when the trajectory changes).
Bad input (wrong shapes, NaN, a trajectory that does not fit the model) raises
:class:`stiction.InputError` (a ``ValueError``).
"""

import base64
import json
import os

import numpy as np

from .. import _stiction as _s
from ._page import render_page

__all__ = ["Viewer", "FORMAT", "VERSION", "load_trajectory", "json_to_html"]

FORMAT = "stiction-trajectory"
VERSION = 1

InputError = _s.InputError

# Colours (RGB in [0, 1]) given to bodies, particles and soft bodies in turn.
PALETTE = [
    (0.122, 0.467, 0.706), (1.000, 0.498, 0.055), (0.173, 0.627, 0.173), (0.580, 0.404, 0.741),
    (0.549, 0.337, 0.294), (0.890, 0.467, 0.761), (0.737, 0.741, 0.133), (0.090, 0.745, 0.812),
]
GROUND = (0.62, 0.64, 0.66)
SKELETON = (0.35, 0.35, 0.38)
TARGET = (0.839, 0.153, 0.157)


def _color(k):
    return PALETTE[k % len(PALETTE)]


def _quaternions(R):
    """Unit quaternions ``[w, x, y, z]`` of rotation matrices ``R`` (..., 3, 3), by Shepperd's
    method (the largest of |w|, |x|, |y|, |z| first: exact at half turns too)."""
    R = np.asarray(R, dtype=float)
    lead = R.shape[:-2]
    m = R.reshape(-1, 3, 3)
    m00, m11, m22 = m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]
    case = np.argmax(np.stack([m00 + m11 + m22, m00, m11, m22], axis=1), axis=1)
    q = np.empty((len(m), 4))
    for k in range(4):
        sel = case == k
        if not sel.any():
            continue
        a = m[sel]
        d = (a[:, 0, 0], a[:, 1, 1], a[:, 2, 2])
        if k == 0:
            r = np.sqrt(np.maximum(1.0 + d[0] + d[1] + d[2], 0.0))
            v = [r / 2, (a[:, 2, 1] - a[:, 1, 2]) / (2 * r), (a[:, 0, 2] - a[:, 2, 0]) / (2 * r),
                 (a[:, 1, 0] - a[:, 0, 1]) / (2 * r)]
        elif k == 1:
            r = np.sqrt(np.maximum(1.0 + d[0] - d[1] - d[2], 0.0))
            v = [(a[:, 2, 1] - a[:, 1, 2]) / (2 * r), r / 2, (a[:, 0, 1] + a[:, 1, 0]) / (2 * r),
                 (a[:, 0, 2] + a[:, 2, 0]) / (2 * r)]
        elif k == 2:
            r = np.sqrt(np.maximum(1.0 - d[0] + d[1] - d[2], 0.0))
            v = [(a[:, 0, 2] - a[:, 2, 0]) / (2 * r), (a[:, 0, 1] + a[:, 1, 0]) / (2 * r), r / 2,
                 (a[:, 1, 2] + a[:, 2, 1]) / (2 * r)]
        else:
            r = np.sqrt(np.maximum(1.0 - d[0] - d[1] + d[2], 0.0))
            v = [(a[:, 1, 0] - a[:, 0, 1]) / (2 * r), (a[:, 0, 2] + a[:, 2, 0]) / (2 * r),
                 (a[:, 1, 2] + a[:, 2, 1]) / (2 * r), r / 2]
        q[sel] = np.stack(v, axis=1)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q.reshape(lead + (4,))


def _rotation(q):
    """Rotation matrices (..., 3, 3) of unit quaternions ``[w, x, y, z]`` (..., 4)."""
    w, x, y, z = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
    ], axis=-2)


def _pose7(H):
    """4x4 transforms (..., 4, 4) as ``[x, y, z, qw, qx, qy, qz]`` (..., 7)."""
    H = np.asarray(H, dtype=float)
    return np.concatenate([H[..., :3, 3], _quaternions(H[..., :3, :3])], axis=-1)


def _encode(a, dtype="float32"):
    a = np.ascontiguousarray(a, dtype=dtype)
    return {"dtype": dtype, "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def _decode(obj, name, dtype=float):
    """An array from the JSON format: nested lists, or ``{"dtype", "shape", "b64"}``."""
    if isinstance(obj, dict):
        try:
            raw = base64.b64decode(obj["b64"])
            a = np.frombuffer(raw, dtype=np.dtype(obj["dtype"])).reshape(obj["shape"])
        except (KeyError, ValueError, TypeError) as e:
            raise InputError(f"{name}: not an encoded array ({e})") from None
        return a.astype(dtype)
    try:
        return np.asarray(obj, dtype=dtype)
    except (ValueError, TypeError) as e:
        raise InputError(f"{name}: not a numeric array ({e})") from None


def _finite(a, name):
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):
        idx = ", ".join(str(int(i)) for i in bad[0])
        raise InputError(f"{name}[{idx}] is not finite ({a[tuple(bad[0])]})")


def _trajectory(Q, nq, what):
    """``Q`` as a float (T, nq) array, checked."""
    try:
        Q = np.asarray(Q, dtype=float)
    except (ValueError, TypeError) as e:
        raise InputError(f"Q must be a numeric array of shape (T, {nq}): {e}") from None
    if Q.ndim != 2 or Q.shape[1] != nq or Q.shape[0] < 1:
        raise InputError(f"Q must have shape (T, {nq}) with T >= 1 ({what} has nq = {nq}), got shape {Q.shape}"
                         + (" (use show(q) for one configuration)" if Q.shape == (nq,) else ""))
    _finite(Q, "Q")
    return Q


class Viewer:
    """A scene of a :class:`~stiction.Model` or a :class:`~stiction.World` and a trajectory
    of it, written as a self-contained web page (:meth:`save_html`).

    :param system: the model or world to draw.
    :param title: the page title (default: the model's name, or ``"world"``).
    :param skeleton: for a model, draw bodies without collision shapes as inertia-equivalent
        boxes joined by a skeleton (the joints' origins); ``False`` draws nothing for them.
    :param visual: for a model, draw its visual shapes (URDF ``<visual>`` geometry:
        primitives and mesh files, :meth:`stiction.Model.visual_shapes`) instead of the
        collision shapes of the bodies that have some; default: when the model has any.
        Mesh files that cannot be read are left out with a :class:`stiction.LoadWarning`.
    :param frames: draw each moving frame's axes (x red, y green, z blue; :meth:`show_frames`):
        every body frame of a model, every moving element of a world.

    A :class:`~stiction.SoftBody` is drawn as the world of that one body (its surface
    triangles moving with its vertex positions: ``Q`` rows of its ``x``).
    """

    def __init__(self, system, title=None, skeleton=True, frames=False, visual=None):
        if isinstance(system, _s.SoftBody):
            system = _s.World([system])
        self.system = system
        self.frames = None    # dict: tracks (list of track indices), length (m, None: automatic)
        self.visual = False   # whether visual shapes (not collision shapes) are drawn
        self.shapes = []      # dicts: name, kind, radius, vertices, triangles, color, opacity, track, local
        self.surfaces = []    # dicts: name, triangles, color, opacity, system
        self.markers = []     # dicts: name, position, radius, color, opacity
        self.times = np.zeros(1)
        self.tracks = np.zeros((1, 0, 7))
        self.surface_positions = []
        self.contacts = None  # list of (n, 6) arrays, one per frame
        if isinstance(system, _s.Model):
            self.kind = "model"
            self.nq = system.nq
            self.title = title or system.name
            self._model_scene(system, skeleton, visual)
        elif isinstance(system, _s.World):
            self.kind = "world"
            self.nq = system.nq
            self.title = title or "world"
            self._world_scene(system)
        else:
            raise TypeError(f"Viewer draws a stiction.Model or a stiction.World, got {type(system).__name__}")
        self._posed = False
        if self.kind == "model":
            self.show(system.neutral())
        if frames:
            self.show_frames()

    def show_frames(self, enabled=True, length=None):
        """Draws (or, with ``enabled=False``, stops drawing) a small triad of axes at each
        moving frame — x red, y green, z blue — posed with it at every frame of the page: the
        body frames of a model, the moving elements (bodies, particles) of a world.

        :param length: the axes' length (m); default 12 % of the scene's size.
        :raises InputError: a length that is not finite and positive.
        """
        if length is not None and not (np.isfinite(length) and length > 0):
            raise InputError(f"length must be finite and positive, got {length}")
        self.frames = {"tracks": None, "length": length} if enabled else None
        return self

    # -- scene -------------------------------------------------------------------------
    def _model_scene(self, model, skeleton, visual):
        shapes = model.collision_shapes()
        visuals = model.visual_shapes() if visual or visual is None else []
        with_shapes = set()
        for k, s in enumerate(visuals):
            body = s["body"]
            with_shapes.add(body)
            rgba = s["color"]
            label = s["name"] or f"visual{k}"
            self._add_shape(f"{model.body_names[body]}/{label}", s, track=body,
                            color=rgba[:3] if rgba else _color(body),
                            opacity=min(max(rgba[3], 0.1), 1.0) if rgba else 1.0)
        self.visual = bool(visuals)
        drawn_visually = set(with_shapes)
        for k, s in enumerate(shapes):
            body = s["body"]
            if body in drawn_visually:
                continue
            if body is not None:
                with_shapes.add(body)
            name = f"{model.body_names[body] if body is not None else 'world'}/{s['kind']}{k}"
            self._add_shape(name, s, track=-1 if body is None else body,
                            color=GROUND if body is None else _color(body))
        if skeleton:
            self._skeleton(model, with_shapes)
        self.ntracks = model.nbodies

    def _skeleton(self, model, with_shapes):
        """Bodies without shapes: an inertia-equivalent box at the COM (a small sphere for a
        point mass), and a rod from each body's origin to its children's joint origins."""
        names = model.body_names
        X = model.forward_kinematics(model.neutral())
        parents = model.parents
        extent = max(0.2, _extent(np.array([x[:3, 3] for x in X] + [np.zeros(3)])))
        scale = 0.25 * extent
        rod = 0.012 * extent
        spec_names = [f"mass:{n}" for n in names] + [f"com:{n}" for n in names] + [f"inertia:{n}" for n in names]
        theta = _s.ParamSpec(model, spec_names).values(model) if names else np.zeros(0)
        nb = len(names)
        masses, coms, inertias = theta[:nb], theta[nb:4 * nb].reshape(nb, 3), theta[4 * nb:].reshape(nb, 6)
        has_children = [any(p == b for p in parents) for b in range(nb)]
        for b, name in enumerate(names):
            if b in with_shapes:
                continue
            color = _color(b)
            xx, yy, zz, xy, xz, yz = inertias[b]
            I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            m = masses[b]
            if m > 0:
                ev, V = np.linalg.eigh(I)
                sq = 6.0 / m * np.array([ev[1] + ev[2] - ev[0], ev[0] + ev[2] - ev[1], ev[0] + ev[1] - ev[2]])
                half = 0.5 * np.sqrt(np.maximum(sq, 0.0))
                if np.linalg.det(V) < 0:
                    V[:, 0] = -V[:, 0]
                if half.max() < 0.02 * scale:
                    self._add_point(f"{name}/com", coms[b], 0.12 * scale, b, color)
                else:
                    half = np.maximum(half, 0.01 * scale)
                    H = np.eye(4)
                    H[:3, :3], H[:3, 3] = V, coms[b]
                    self._add_shape(f"{name}/inertia box", _box(half, H), track=b, color=color,
                                    opacity=0.55 if has_children[b] else 1.0)
            if has_children[b] or parents[b] is not None:
                self._add_point(f"{name}/joint", np.zeros(3), 2 * rod, b, SKELETON)
            for c, p in enumerate(parents):
                if p == b:
                    rel = np.linalg.solve(X[b], X[c])[:3, 3]
                    if np.linalg.norm(rel) > 1e-9:
                        self._add_segment(f"{name}/rod{c}", np.zeros(3), rel, rod, b, SKELETON)

    def _world_scene(self, world):
        surfaces = world.surfaces()
        shapes = world.collision_shapes()
        self._world_tracks = []
        for index, s in enumerate(shapes):
            if len(surfaces[s["system"]]):
                continue  # a soft body's contact vertices: drawn as its surface
            moving = s["element"] is not None
            name = f"system{s['system']}/{s['kind']}{s['shape']}"
            color = _color(s["system"] + (s["element"] or 0)) if moving else GROUND
            track = len(self._world_tracks) if moving else -1
            local = dict(s)
            if moving:
                local["pose"] = np.eye(4)  # the track is the shape's own world pose
                self._world_tracks.append(len(self._world_tracks))
            self._add_shape(name, local, track=track, color=color)
            self.shapes[-1]["world_shape"] = index
        for i, tri in enumerate(surfaces):
            if len(tri):
                qs = world.blocks(i)[0]
                self.surfaces.append({"name": f"system{i}/surface", "triangles": np.asarray(tri, dtype=np.int64),
                                      "color": _color(i + 4), "opacity": 1.0, "slice": (qs.start, qs.stop)})
        self.ntracks = len(self._world_tracks)

    def _add_shape(self, name, s, track, color, opacity=1.0):
        self.shapes.append({
            "name": name, "kind": s["kind"], "radius": float(s["radius"]),
            "vertices": np.asarray(s["vertices"], dtype=float).reshape(-1, 3),
            "triangles": np.asarray(s["triangles"], dtype=np.int64).reshape(-1, 3),
            "color": tuple(float(c) for c in color), "opacity": float(opacity), "track": int(track),
            "local": _pose7(s["pose"]),
        })

    def _add_point(self, name, p, radius, track, color):
        H = np.eye(4)
        H[:3, 3] = p
        self._add_shape(name, {"kind": "sphere", "radius": radius, "vertices": np.zeros((1, 3)),
                               "triangles": np.zeros((0, 3)), "pose": H}, track, color)

    def _add_segment(self, name, a, b, radius, track, color):
        self._add_shape(name, {"kind": "capsule", "radius": radius, "vertices": np.array([a, b]),
                               "triangles": np.zeros((0, 3)), "pose": np.eye(4)}, track, color)

    # -- trajectories ------------------------------------------------------------------
    def show(self, q):
        """Shows one configuration ``q`` (nq,): a page of one frame.

        :raises InputError: a wrong length or a non-finite entry.
        """
        q = np.asarray(q, dtype=float)
        if q.shape != (self.nq,):
            raise InputError(f"q must have shape ({self.nq},) (nq of the {self.kind}), got shape {q.shape}")
        return self.animate(q[None, :], dt=1.0)

    def animate(self, Q, dt, contacts=None, fps=60.0):
        """Sets the trajectory: row k of ``Q`` (T, nq) is the configuration at time k·dt.

        :param dt: the time between rows (s, > 0).
        :param contacts: optional overlay, one entry per row of ``Q``: a dict with ``points``
            and ``normals`` (as :meth:`stiction.Model.contacts` returns), a list of dicts with
            ``point`` and ``normal`` (:attr:`stiction.WorldStepRecord.contacts`), or an
            (n, 6) array of points and normals; or ``"auto"`` (a model: its contacts at each
            kept frame, :meth:`stiction.Model.contacts`).
        :param fps: frames kept per second of simulated time (rows are subsampled, the last
            one always kept), which bounds the page size.
        :raises InputError: a wrong shape of ``Q``, NaN or inf, a bad ``dt``, ``fps`` or
            contact list.
        """
        Q = _trajectory(Q, self.nq, f"the {self.kind}")
        if not (np.isfinite(dt) and dt > 0):
            raise InputError(f"dt must be finite and positive, got {dt}")
        if not (np.isfinite(fps) and fps > 0):
            raise InputError(f"fps must be finite and positive, got {fps}")
        T = len(Q)
        if contacts is not None and not isinstance(contacts, str) and len(contacts) != T:
            raise InputError(f"contacts must have one entry per row of Q ({T}), got {len(contacts)}")
        stride = max(1, int(np.floor(1.0 / (fps * dt) + 1e-9)))
        keep = np.arange(0, T, stride)
        if keep[-1] != T - 1:
            keep = np.append(keep, T - 1)
        Qk = Q[keep]
        if self.kind == "model":
            model = self.system
            X = np.array([model.forward_kinematics(q) for q in Qk]).reshape(len(Qk), model.nbodies, 4, 4)
            tracks = _pose7(X)
        else:
            P = self.system.shape_poses(Qk)
            idx = [s["world_shape"] for s in self.shapes if s["track"] >= 0]
            tracks = _pose7(P[:, idx]) if idx else np.zeros((len(Qk), 0, 7))
        if contacts == "auto":
            if self.kind != "model":
                raise InputError('contacts="auto" needs a Model; pass the contacts of each step for a World')
            frames = [_contact_array(self.system.contacts(q), k) for k, q in enumerate(Qk)]
        elif contacts is not None:
            if isinstance(contacts, str):
                raise InputError(f'contacts must be a list or "auto", got {contacts!r}')
            frames = [_contact_array(contacts[int(k)], int(k)) for k in keep]
        else:
            frames = None
        self.times = keep * float(dt)
        self.tracks = tracks
        self.surface_positions = [Qk[:, s["slice"][0]:s["slice"][1]].reshape(len(Qk), -1, 3) for s in self.surfaces]
        self.contacts = frames
        self._posed = True
        self._version = getattr(self, "_version", 0) + 1
        return self

    def add_target(self, point, radius=None, color=TARGET, name="target"):
        """A target point (a red sphere; ``radius`` default 2 % of the scene size)."""
        return self.add_sphere(point, radius, color=color, name=name)

    def add_sphere(self, center, radius=None, color=(0.8, 0.2, 0.2), opacity=1.0, name=None):
        """A fixed sphere (an obstacle, a goal): ``radius`` default 2 % of the scene size.

        :raises InputError: a centre that is not 3 finite numbers, a negative radius.
        """
        c = np.asarray(center, dtype=float)
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise InputError(f"center must be 3 finite numbers, got {center!r}")
        if radius is not None and not (np.isfinite(radius) and radius > 0):
            raise InputError(f"radius must be finite and positive, got {radius}")
        if not (0 < opacity <= 1):
            raise InputError(f"opacity must be in (0, 1], got {opacity}")
        self.markers.append({"name": name or f"marker{len(self.markers)}", "position": c, "radius": radius,
                             "color": tuple(float(x) for x in color), "opacity": float(opacity)})
        return self

    # -- output ------------------------------------------------------------------------
    def _view(self):
        """The camera's target and the radius of a sphere holding the scene: the shapes'
        vertices (padded by their radii) at up to 20 frames, the surfaces, the markers."""
        T = len(self.times)
        frames = np.unique(np.linspace(0, T - 1, min(T, 20)).round().astype(int))
        pts = [self.tracks[frames, :, :3].reshape(-1, 3)]
        for s in self.shapes:
            if s["kind"] == "plane" or not len(s["vertices"]):
                continue
            local = s["vertices"] @ _rotation(s["local"][3:]).T + s["local"][:3]
            if s["track"] >= 0:
                P = self.tracks[frames, s["track"]]
                world = np.einsum("fij,vj->fvi", _rotation(P[:, 3:]), local) + P[:, None, :3]
            else:
                world = local[None]
            world = world.reshape(-1, 3)
            pts += [world - s["radius"], world + s["radius"]]
        pts += [X[frames].reshape(-1, 3) for X in self.surface_positions]
        pts += [m["position"][None, :] for m in self.markers]
        pts = np.concatenate([p for p in pts if len(p)] or [np.zeros((1, 3))])
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        radius = max(0.5 * float(np.linalg.norm(hi - lo)), 0.05)
        return {"center": ((lo + hi) / 2).tolist(), "radius": radius, "point_radius": 0.01 * radius,
                "normal_length": 0.15 * radius, "axes_length": 0.12 * radius}

    def to_dict(self, encode=True):
        """The scene and trajectory in the trajectory JSON format (docs/viz.md); arrays as
        ``{"dtype", "shape", "b64"}`` (float32/uint32, base64) with ``encode``, else lists."""
        if not getattr(self, "_posed", True):
            raise InputError("no configuration yet: call show(q) or animate(Q, dt) first")
        enc = (lambda a, dt="float32": _encode(a, dt)) if encode else (lambda a, dt="float32": np.asarray(a).tolist())
        view = self._view()
        shapes = [{"name": s["name"], "kind": s["kind"], "radius": s["radius"], "vertices": enc(s["vertices"]),
                   "triangles": enc(s["triangles"], "uint32"), "color": list(s["color"]),
                   "opacity": s["opacity"], "track": s["track"], "local": s["local"].tolist()}
                  for s in self.shapes]
        surfaces = [{"name": s["name"], "triangles": enc(s["triangles"], "uint32"), "color": list(s["color"]),
                     "opacity": s["opacity"], "num_vertices": int(X.shape[1]), "positions": enc(X)}
                    for s, X in zip(self.surfaces, self.surface_positions)]
        r = view["radius"]
        markers = [{"name": m["name"], "position": m["position"].tolist(),
                    "radius": float(m["radius"] if m["radius"] is not None else 0.02 * r),
                    "color": list(m["color"]), "opacity": m["opacity"]} for m in self.markers]
        out = {"format": FORMAT, "version": VERSION, "title": self.title, "times": enc(self.times),
               "num_tracks": int(self.tracks.shape[1]), "poses": enc(self.tracks), "shapes": shapes,
               "surfaces": surfaces, "markers": markers, "view": view, "contacts": None}
        if self.frames is not None:
            tracks = self.frames["tracks"]
            tracks = list(range(int(self.tracks.shape[1]))) if tracks is None else [int(t) for t in tracks]
            out["frames"] = {"tracks": tracks, "length": float(self.frames["length"] or view["axes_length"])}
        if self.contacts is not None:
            counts = np.array([len(c) for c in self.contacts], dtype=np.uint32)
            data = np.concatenate([c for c in self.contacts] + [np.zeros((0, 6))])
            out["contacts"] = {"counts": enc(counts, "uint32"), "data": enc(data)}
        return out

    def to_html(self):
        """The page as a string (:meth:`save_html`)."""
        return render_page(self.to_dict(encode=True))

    def _repr_html_(self):
        """Jupyter: the page in an iframe (``srcdoc``: the page travels inside the notebook, no
        server)."""
        import html

        return (f'<iframe srcdoc="{html.escape(self.to_html(), quote=True)}" '
                'style="width: 100%; height: 520px; border: 0" allow="fullscreen"></iframe>')

    # -- live mode -----------------------------------------------------------------------
    def serve(self, port=0, host="127.0.0.1", open_browser=False):
        """Serves the page on ``http://host:port/`` from a background thread (the standard
        library's ``http.server``) and returns its URL; :meth:`stop` ends it. The page is
        rendered at each request, and a served page checks every second whether the
        trajectory changed (:meth:`animate`, :meth:`show`, :meth:`add_target`, ...) and then
        reloads itself: call ``animate`` while a simulation runs and the browser follows.
        ``/trajectory.json`` serves the trajectory file (:meth:`save_json`). Calling
        ``serve`` again returns the running server's URL.

        :param port: the TCP port (0: a free one, chosen by the system).
        :param host: the address to listen on (default: this machine only).
        :param open_browser: also open the URL in the default web browser.
        :raises OSError: the port cannot be bound.
        """
        if getattr(self, "_server", None) is not None:
            return self.url
        import http.server
        import threading

        server = http.server.ThreadingHTTPServer((host, int(port)), _handler(self))
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="stiction.viz server", daemon=True)
        thread.start()
        self._server = (server, thread)
        name = server.server_address[0]
        self.url = f"http://{'[' + name + ']' if ':' in name else name}:{server.server_address[1]}/"
        if open_browser:
            import webbrowser

            webbrowser.open(self.url)
        return self.url

    def stop(self):
        """Stops the server of :meth:`serve` (nothing happens when none runs)."""
        running = getattr(self, "_server", None)
        if running is None:
            return
        server, thread = running
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        self._server = None
        self.url = None

    def _live_state(self):
        """What a served page polls: changes whenever the scene or trajectory does."""
        return f"{getattr(self, '_version', 0)}:{len(self.markers)}:{self.frames}:{self.title}"

    def save_html(self, path):
        """Writes the page (one self-contained HTML file) to ``path``; returns ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_html())
        return path

    def save_json(self, path, encode=True):
        """Writes the scene and trajectory as a trajectory JSON file (docs/viz.md)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(encode=encode), f, separators=(",", ":"), allow_nan=False)
        return path


def _handler(viewer):
    """The request handler of :meth:`Viewer.serve`: ``/`` the page (live), ``/trajectory.json``,
    ``/version`` (what the page polls)."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            path = self.path.split("?", 1)[0]
            try:
                if path in ("/", "/index.html"):
                    payload = viewer.to_dict(encode=True)
                    payload["live"] = {"version": viewer._live_state()}
                    body, kind = render_page(payload).encode("utf-8"), "text/html; charset=utf-8"
                elif path == "/trajectory.json":
                    body = json.dumps(viewer.to_dict(encode=True), separators=(",", ":"), allow_nan=False).encode()
                    kind = "application/json"
                elif path == "/version":
                    body, kind = viewer._live_state().encode("utf-8"), "text/plain; charset=utf-8"
                else:
                    self.send_error(404, "stiction.viz serves /, /trajectory.json and /version")
                    return
            except (ValueError, ImportError) as e:
                self.send_error(500, str(e).splitlines()[0][:200])
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # noqa: A002 - quiet: no line per request
            pass

    return Handler


def _box(half, H):
    """A box of half extents ``half`` as a shape dict (vertices and triangles) at pose ``H``."""
    s = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * half
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    tris = [t for a, b, c, d in faces for t in ((a, b, c), (a, c, d))]
    return {"kind": "box", "radius": 0.0, "vertices": s, "triangles": np.array(tris), "pose": H}


def _extent(points):
    return float(np.linalg.norm(points.max(axis=0) - points.min(axis=0))) if len(points) else 0.0


def _contact_array(c, k):
    """One frame's contacts as an (n, 6) array of points and normals."""
    where = f"contacts[{k}]"
    if isinstance(c, dict) and "points" in c:
        P, N = np.asarray(c["points"], dtype=float).reshape(-1, 3), np.asarray(c["normals"], dtype=float).reshape(-1, 3)
        if len(P) != len(N):
            raise InputError(f"{where}: {len(P)} points but {len(N)} normals")
        a = np.hstack([P, N])
    elif isinstance(c, (list, tuple)) and all(isinstance(x, dict) for x in c):
        try:
            a = np.array([np.concatenate([np.asarray(x["point"], float), np.asarray(x["normal"], float)])
                          for x in c]).reshape(-1, 6)
        except (KeyError, ValueError) as e:
            raise InputError(f"{where}: each contact needs a 3-vector 'point' and 'normal' ({e})") from None
    else:
        try:
            a = np.asarray(c, dtype=float)
        except (ValueError, TypeError):
            raise InputError(f"{where} must be a contacts dict, a list of contact dicts or an (n, 6) array") from None
        if a.size == 0:
            a = a.reshape(0, 6)
        if a.ndim != 2 or a.shape[1] != 6:
            raise InputError(f"{where} must have shape (n, 6) (point, normal), got {a.shape}")
    _finite(a, where)
    return a


# -- trajectory files ----------------------------------------------------------------------
def load_trajectory(source, base_dir=None):
    """A :class:`Viewer` from a trajectory JSON file (path) or its parsed dict: either a
    scene (``shapes``, ``times``, ``poses``, ...: what :meth:`Viewer.save_json` writes) or a
    model reference (``model``: the model's JSON object or text, or ``model_file``: a path
    relative to the file, of :meth:`stiction.Model.to_json` output; with ``q`` (T, nq) and
    ``dt``; optional ``targets``: points, ``markers`` as in a scene, ``frames``: true, and
    ``contacts``: ``"auto"``, the model's contacts at every kept frame).

    :raises InputError: malformed content, a trajectory that does not fit its model.
    """
    if isinstance(source, (str, os.PathLike)):
        base_dir = os.path.dirname(os.path.abspath(source))
        try:
            with open(source, encoding="utf-8") as f:
                data = json.load(f)
        except json.JSONDecodeError as e:
            raise InputError(f"{source}: not JSON ({e})") from None
    else:
        data = source
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not a {FORMAT} file: the top level must be an object with \"format\": \"{FORMAT}\"")
    if data.get("version") != VERSION:
        raise InputError(f"unsupported {FORMAT} version {data.get('version')!r} (this reads version {VERSION})")
    if "model" in data or "model_file" in data:
        return _from_model_reference(data, base_dir or os.getcwd())
    return _from_scene(data)


def _from_model_reference(data, base_dir):
    if "model" in data:
        text = data["model"] if isinstance(data["model"], str) else json.dumps(data["model"])
    else:
        path = os.path.join(base_dir, data["model_file"])
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise InputError(f"model_file {data['model_file']!r}: {e}") from None
    model = _s.Model.from_json(text)
    for key in ("q", "dt"):
        if key not in data:
            raise InputError(f"a model reference needs {key!r}")
    Q = _decode(data["q"], "q")
    if Q.ndim != 2 or Q.shape[1] != model.nq:
        raise InputError(f"q must have shape (T, {model.nq}) for model {model.name!r} (nq = {model.nq}), "
                         f"got shape {Q.shape}")
    v = Viewer(model, title=data.get("title"), frames=bool(data.get("frames", False)))
    contacts = data.get("contacts")
    if contacts is not None and contacts != "auto":
        raise InputError(f'a model reference\'s "contacts" can only be "auto" (the model\'s contacts at every '
                         f'kept frame), got {contacts!r}')
    v.animate(Q, float(data["dt"]), fps=float(data.get("fps", 60.0)), contacts=contacts)
    for p in data.get("targets", []):
        v.add_target(p)
    for m in data.get("markers", []):
        v.add_sphere(m["position"], m.get("radius"), color=m.get("color", TARGET), opacity=m.get("opacity", 1.0),
                     name=m.get("name"))
    return v


class _SceneViewer(Viewer):
    """A viewer of a scene read from a trajectory file (no model behind it)."""

    def __init__(self):  # noqa: D401 - filled by _from_scene
        self.system = None
        self.kind = "scene"
        self.frames = None
        self.visual = False


def _from_scene(data):
    v = _SceneViewer()
    try:
        v.title = str(data.get("title") or "stiction")
        v.times = _decode(data["times"], "times").reshape(-1)
        T = len(v.times)
        if T < 1:
            raise InputError("times must hold at least one time")
        _finite(v.times, "times")
        if np.any(np.diff(v.times) < 0):
            raise InputError("times must be non-decreasing")
        M = int(data.get("num_tracks", 0))
        v.tracks = _decode(data["poses"], "poses").reshape(T, M, 7) if M else np.zeros((T, 0, 7))
        _finite(v.tracks, "poses")
        v.shapes = []
        for k, s in enumerate(data["shapes"]):
            track = int(s.get("track", -1))
            if track >= M:
                raise InputError(f"shapes[{k}].track = {track} but there are {M} tracks (num_tracks)")
            if s["kind"] not in ("plane", "sphere", "box", "capsule", "cylinder", "convex_mesh", "mesh"):
                raise InputError(f"shapes[{k}].kind {s['kind']!r} is not a shape kind")
            verts = _decode(s.get("vertices", []), f"shapes[{k}].vertices").reshape(-1, 3)
            tris = _decode(s.get("triangles", []), f"shapes[{k}].triangles", np.int64).reshape(-1, 3)
            if len(tris) and (tris.min() < 0 or tris.max() >= len(verts)):
                raise InputError(f"shapes[{k}].triangles index vertices out of range (0..{len(verts) - 1})")
            local = _decode(s.get("local", [0, 0, 0, 1, 0, 0, 0]), f"shapes[{k}].local").reshape(7)
            _finite(verts, f"shapes[{k}].vertices")
            _finite(local, f"shapes[{k}].local")
            v.shapes.append({"name": s.get("name", f"shape{k}"), "kind": s["kind"], "radius": float(s.get("radius", 0)),
                             "vertices": verts, "triangles": tris, "color": tuple(s.get("color", _color(k))),
                             "opacity": float(s.get("opacity", 1.0)), "track": track, "local": local})
        v.surfaces, v.surface_positions = [], []
        for k, s in enumerate(data.get("surfaces", [])):
            X = _decode(s["positions"], f"surfaces[{k}].positions")
            n = int(s.get("num_vertices", X.shape[-2] if X.ndim == 3 else 0))
            X = X.reshape(T, n, 3)
            _finite(X, f"surfaces[{k}].positions")
            tris = _decode(s["triangles"], f"surfaces[{k}].triangles", np.int64).reshape(-1, 3)
            if len(tris) and (tris.min() < 0 or tris.max() >= n):
                raise InputError(f"surfaces[{k}].triangles index vertices out of range (0..{n - 1})")
            v.surfaces.append({"name": s.get("name", f"surface{k}"), "triangles": tris,
                               "color": tuple(s.get("color", _color(k))), "opacity": float(s.get("opacity", 1.0))})
            v.surface_positions.append(X)
        v.markers = []
        for m in data.get("markers", []):
            v.add_sphere(m["position"], m.get("radius"), color=m.get("color", TARGET),
                         opacity=m.get("opacity", 1.0), name=m.get("name"))
        f = data.get("frames")
        if f:
            tracks = [int(t) for t in f.get("tracks", range(M))]
            if any(t < 0 or t >= M for t in tracks):
                raise InputError(f"frames.tracks must index the {M} tracks (num_tracks), got {tracks}")
            length = f.get("length")
            v.show_frames(length=None if length is None else float(length))
            v.frames["tracks"] = tracks
        else:
            v.frames = None
        c = data.get("contacts")
        if c:
            counts = _decode(c["counts"], "contacts.counts", np.int64).reshape(-1)
            flat = _decode(c["data"], "contacts.data").reshape(-1, 6)
            if len(counts) != T or counts.sum() != len(flat):
                raise InputError("contacts.counts must have one count per frame summing to the rows of contacts.data")
            v.contacts = np.split(flat, np.cumsum(counts)[:-1])
        else:
            v.contacts = None
    except KeyError as e:
        raise InputError(f"trajectory file: missing key {e}") from None
    except ValueError as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"trajectory file: inconsistent sizes ({e})") from None
    return v


def json_to_html(source, out):
    """Reads a trajectory JSON file and writes its page to ``out``; returns ``out``."""
    return load_trajectory(source).save_html(out)
