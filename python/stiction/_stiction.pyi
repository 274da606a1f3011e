"""Type stubs of the compiled extension ``stiction._stiction``.

Array arguments accept real numeric array-likes: float64 numpy arrays are read in
place (any strides or order); lists, tuples and numpy arrays of integer, unsigned or
floating dtypes (float16/float32) are converted to float64. Boolean, complex, string,
bytes and object inputs and ragged nested sequences raise :class:`InputError`, as do
wrong shapes and, where a finite value is required, NaN and infinities. Results are
new float64 numpy arrays (C order).
"""

import builtins
import os
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

ArrayLike = npt.ArrayLike
Vector = npt.NDArray[np.float64]
Matrix = npt.NDArray[np.float64]
PathLike = Union[str, "os.PathLike[str]"]

class StictionError(Exception):
    """Base class of every error raised by stiction."""

class ModelError(StictionError):
    """The model is invalid (negative mass, zero joint axis, disconnected tree, ...)."""

class LoadError(StictionError):
    """A model file could not be read or parsed (missing file, malformed URDF, bad mesh)."""

class NumericalError(StictionError):
    """A numerical failure: a singular inertia or a non-finite result."""

class InputError(StictionError, ValueError):
    """An argument is invalid: wrong length or shape, NaN or infinity, an unknown name.

    Subclass of both :class:`StictionError` and :class:`ValueError`; the message
    names the argument (e.g. ``"q has length 3, expected 7 (model.nq)"`` or
    ``"v[2] is not finite (NaN)"``).
    """

class LoadWarning(UserWarning):
    """Something in a model file was ignored or approximated while loading it."""

class Model:
    """An articulated rigid-body model (immutable).

    Build one with :class:`ModelBuilder`, :meth:`from_urdf`, :meth:`from_json` or
    :mod:`stiction.samples`. Bodies are numbered depth-first; ``q`` has ``nq``
    entries (quaternions ``[w, x, y, z]`` for ball and free joints) and ``v`` has
    ``nv``. Models pickle (through JSON) and compare with ``==``.
    """

    @staticmethod
    def from_urdf(
        path: PathLike,
        floating_base: bool = False,
        package_dirs: Union[PathLike, Sequence[PathLike], None] = None,
        load_collision_meshes: bool = True,
        strict: bool = False,
        merge_fixed_joints: bool = True,
    ) -> "Model":
        """Loads a URDF file.

        :param floating_base: attach the root link with a free joint instead of welding it.
        :param package_dirs: one directory or a list of directories searched for ``package://NAME/...`` URIs.
        :param load_collision_meshes: ``False`` drops mesh collision shapes (with a warning each).
        :param strict: unsupported elements are errors instead of warnings.
        :param merge_fixed_joints: merge links welded to their parent link by fixed joints
            into one rigid body (faster, same dynamics); they stay addressable by name
            (:attr:`frame_names`, :meth:`frame_pose`, :meth:`body_jacobian`, parameters).
        :raises LoadError: the file is missing, unreadable, malformed or describes an invalid model.

        Each loader warning is issued as a :class:`LoadWarning` attributed to the caller.
        """
    @staticmethod
    def from_mjcf(path: PathLike, strict: bool = False, merge_fixed_joints: bool = True) -> "Model":
        """Loads an MJCF (MuJoCo XML) file: bodies, inertias, joints and collision geometry
        (docs/models.md, "MJCF").

        :param strict: unsupported elements (actuators, sensors, sites, ...) are errors
            instead of warnings.
        :param merge_fixed_joints: merge bodies without joints into their parent body;
            they stay addressable by name as frames.
        :raises LoadError: the file is missing, unreadable, malformed or describes an invalid model.

        Each loader warning is issued as a :class:`LoadWarning` attributed to the caller.
        """
    @staticmethod
    def from_json(s: str) -> "Model":
        """Reads a model from :meth:`to_json` output.

        :raises InputError: the text is not a model in JSON.
        :raises ModelError: the described model is invalid.
        """
    def to_json(self) -> str:
        """Serializes the model to JSON."""
    @property
    def name(self) -> str:
        """The model name."""
    @property
    def nq(self) -> int:
        """Number of configuration coordinates."""
    @property
    def nv(self) -> int:
        """Number of degrees of freedom (velocity coordinates)."""
    @property
    def nbodies(self) -> int:
        """Number of bodies, the world excluded."""
    @property
    def joint_names(self) -> List[str]:
        """Names of the joints with degrees of freedom, in coordinate order."""
    @property
    def body_names(self) -> List[str]:
        """Names of the bodies in depth-first (body index) order."""
    @property
    def frame_names(self) -> List[str]:
        """Names of every link: the bodies' (in body order), then the links merged into
        them by fixed-joint merging."""
    @property
    def gravity(self) -> Vector:
        """Gravity in world coordinates, shape (3,)."""
    @property
    def total_mass(self) -> float:
        """Total mass of the bodies."""
    @property
    def lower_limits(self) -> Vector:
        """Lower position limits, shape (nq,); -inf where unlimited."""
    @property
    def upper_limits(self) -> Vector:
        """Upper position limits, shape (nq,); +inf where unlimited."""
    @property
    def velocity_limits(self) -> Vector:
        """Velocity limits, shape (nv,)."""
    @property
    def effort_limits(self) -> Vector:
        """Effort limits, shape (nv,)."""
    def body_index(self, name: str) -> int:
        """Index of the body named ``name`` (raises :class:`InputError` if unknown)."""
    def joint_q_index(self, name: str) -> int:
        """First configuration index of the joint named ``name``."""
    def joint_v_index(self, name: str) -> int:
        """First velocity index of the joint named ``name``."""
    def neutral(self) -> Vector:
        """The neutral configuration (zero angles, identity quaternions), shape (nq,)."""
    def random_configuration(self, seed: int = 0) -> Vector:
        """A random configuration reproducible from ``seed``, shape (nq,)."""
    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float) -> Vector:
        """``q ⊕ v·dt`` on the configuration manifold, shape (nq,).

        :raises InputError: wrong lengths, NaN/inf, or a quaternion of ``q`` far from unit
            length (norm outside [0.5, 2]; :meth:`normalize` fixes small drift).
        """
    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Vector:
        """``q1 ⊖ q0``: the velocity taking ``q0`` to ``q1`` in unit time, shape (nv,).

        :raises InputError: wrong lengths, NaN/inf, or a quaternion far from unit length.
        """
    def normalize(self, q: ArrayLike) -> Vector:
        """``q`` with every quaternion normalised, shape (nq,)."""
    def tangent_gradient(self, q: ArrayLike, g: ArrayLike) -> np.ndarray:
        """Gradients on coordinates to the tangent space: ``g = ∂ℓ/∂q`` at ``q`` (both shape
        ``(..., nq)``) gives ``Eᵀ g`` (``(..., nv)``), ``E = ∂(q ⊕ δ)/∂δ`` at δ = 0; what a
        ``StepRecord.vjp`` or ``Tape.backward`` takes for a loss written on coordinates.

        :raises InputError: mismatched shapes, NaN, degenerate quaternions.
        """
    def coordinate_gradient(self, q: ArrayLike, g: ArrayLike) -> np.ndarray:
        """Tangent gradients to coordinates: ``g = ∂ℓ/∂δ`` (``(..., nv)``) at ``q`` (``(..., nq)``)
        gives ``Dᵀ g`` (``(..., nq)``), the exact gradient of ``q ↦ ℓ(normalize(q))``: no
        component along a quaternion, and ``tangent_gradient`` of it gives ``g`` back.

        :raises InputError: mismatched shapes, NaN, degenerate quaternions.
        """
    def mass_matrix(self, q: ArrayLike) -> Matrix:
        """The joint-space mass matrix M(q) (CRBA, armature included), shape (nv, nv)."""
    def bias_forces(self, q: ArrayLike, v: ArrayLike) -> Vector:
        """Coriolis, centrifugal and gravity forces c(q, v), shape (nv,)."""
    def gravity_forces(self, q: ArrayLike) -> Vector:
        """Generalized gravity forces g(q) = c(q, 0), shape (nv,)."""
    def inverse_dynamics(
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike, wrenches: Optional[ArrayLike] = None
    ) -> Vector:
        """Joint forces realising accelerations ``a`` (RNEA), shape (nv,).

        :param wrenches: optional world-frame body wrenches ``[torque, force]`` about
            the world origin, shape (nbodies, 6).
        """
    def forward_dynamics(
        self, q: ArrayLike, v: ArrayLike, tau: ArrayLike, wrenches: Optional[ArrayLike] = None
    ) -> Vector:
        """Joint accelerations under joint forces ``tau`` (ABA), shape (nv,).

        :param wrenches: optional world-frame body wrenches, shape (nbodies, 6).
        :raises NumericalError: the articulated inertia is singular.
        """
    def rnea_derivatives(
        self, q: ArrayLike, v: ArrayLike, a: ArrayLike, wrenches: Optional[ArrayLike] = None
    ) -> Tuple[Matrix, Matrix, Matrix]:
        """Analytic derivatives of inverse dynamics: ``(dtau_dq, dtau_dv, M)``, each (nv, nv).

        ``dtau_dq`` is taken in the **tangent space**: column ``i`` is the derivative of
        ``inverse_dynamics(integrate(q, e_i, eps), v, a)`` at ``eps = 0`` (nv columns, also
        for quaternion joints, where nq > nv). ``dtau_dv`` is ``∂τ/∂v`` and ``M`` the mass
        matrix at ``q`` (``= ∂τ/∂a``).

        :param wrenches: optional world-frame body wrenches, shape (nbodies, 6).
        """
    def aba_derivatives(
        self, q: ArrayLike, v: ArrayLike, tau: ArrayLike, wrenches: Optional[ArrayLike] = None
    ) -> Tuple[Matrix, Matrix, Matrix]:
        """Analytic derivatives of forward dynamics: ``(da_dq, da_dv, Minv)``, each (nv, nv).

        ``da_dq`` is taken in the **tangent space** (column ``i``: derivative along
        ``integrate(q, e_i, eps)``); ``Minv = M⁻¹ = ∂a/∂τ``.

        :param wrenches: optional world-frame body wrenches, shape (nbodies, 6).
        :raises NumericalError: the mass matrix is not positive definite.
        """
    def forward_kinematics(self, q: ArrayLike) -> List[Matrix]:
        """World pose of every body as a 4x4 homogeneous transform, in body order."""
    def body_jacobian(self, q: ArrayLike, body: Union[int, str], frame: str = "world") -> Matrix:
        """The 6 x nv Jacobian ``[angular; linear]`` of ``body`` (index or name; a link
        merged into a body is named like a body, and its frame is used).

        :param frame: ``"world"`` (spatial velocity at the world origin), ``"local"``
            (body frame) or ``"local_world_aligned"`` (body origin, world axes).
        """
    def frame_pose(self, q: ArrayLike, name: Union[int, str]) -> Matrix:
        """World pose (4 x 4 homogeneous transform) of the link ``name`` (a body, or a
        link merged into a body) at configuration ``q``."""
    def kinetic_energy(self, q: ArrayLike, v: ArrayLike) -> float:
        """Kinetic energy ``½ vᵀ M(q) v``."""
    def potential_energy(self, q: ArrayLike) -> float:
        """Gravitational plus spring potential energy."""
    def center_of_mass(self, q: ArrayLike) -> Vector:
        """Centre of mass in world coordinates, shape (3,)."""
    def momentum(self, q: ArrayLike, v: ArrayLike) -> Vector:
        """Spatial momentum ``[angular; linear]`` about the world origin, shape (6,)."""
    def with_gravity(self, g: ArrayLike) -> "Model":
        """A copy of this model with gravity ``g``."""
    @property
    def nshapes(self) -> int:
        """Number of collision shapes: every body's, in body order, then the world's."""
    @property
    def parents(self) -> List[Optional[int]]:
        """The parent body of every body, in body order (``None``: the world)."""
    def collision_shapes(self) -> List[Dict[str, Any]]:
        """The compiled collision shapes, in the order of :attr:`nshapes`, each a dict (what
        :mod:`stiction.viz` draws; docs/viz.md):

        * ``kind``: ``"plane"``, ``"sphere"``, ``"box"``, ``"capsule"``, ``"cylinder"`` (a
          prism), ``"convex_mesh"`` or ``"mesh"``;
        * ``body``: the body index, ``None`` for the world's shapes;
        * ``pose`` (4, 4): the shape frame in the body frame (in the world for the world's shapes);
        * ``radius``: the sweep radius (a sphere's or capsule's radius; 0 otherwise);
        * ``vertices`` (k, 3) and ``triangles`` (m, 3, int64): the core in the shape frame —
          a sphere's core is one point, a capsule's a segment along z, a convex core's faces
          are fanned into triangles, a plane (the half-space z <= 0) has none.
        """
    def visual_shapes(self) -> List[Dict[str, Any]]:
        """The visual shapes (URDF ``<visual>`` elements kept by the loader), body by body, each
        a dict (what :mod:`stiction.viz` draws instead of the collision shapes; docs/viz.md):

        * ``body``: the body index; ``name``: the element's name or ``None``;
        * ``kind``: ``"sphere"``, ``"box"``, ``"capsule"``, ``"cylinder"``, ``"mesh"`` or ``"plane"``;
        * ``pose`` (4, 4): the shape frame in the body frame; ``radius``: as in
          :meth:`collision_shapes`;
        * ``vertices`` (k, 3) and ``triangles`` (m, 3, int64) in the shape frame (a mesh file's
          triangles, scaled);
        * ``color``: RGBA in [0, 1] or ``None``; ``file``: the mesh file or ``None``.

        Mesh files (.obj, .stl, .dae) are read by this call; one that is missing or unreadable,
        and geometry that cannot be drawn, is left out with a :class:`LoadWarning` naming it.
        """
    def shape_poses(self, q: ArrayLike) -> np.ndarray:
        """World poses (4 x 4) of the collision shapes at ``q`` (nq,): shape (nshapes, 4, 4);
        at every row of ``Q`` (T, nq): shape (T, nshapes, 4, 4).

        :raises InputError: another shape, or a non-finite entry (named by row and column).
        """
    def contacts(self, q: ArrayLike, margin: float = 0.0, jacobians: bool = False) -> Dict[str, Any]:
        """The contacts at configuration ``q``: every feature pair of two shapes whose
        signed distance is below ``margin`` (metres, >= 0; 0 keeps touching and
        overlapping pairs). Returns a dict:

        * ``points`` (N, 3): contact points, midway between the two surfaces;
        * ``normals`` (N, 3): unit normals pointing from shape A to shape B;
        * ``distances`` (N,): signed distances, negative when the shapes overlap;
        * ``body_a``, ``body_b``: link names (``"world"`` for the world's own shapes;
          shapes on links welded to the world keep their link's name);
        * ``shape_a``, ``shape_b`` (N,): collision shape indices (see :attr:`nshapes`);
        * ``kinds``: ``"face-vertex"``, ``"vertex-face"``, ``"edge-edge"``,
          ``"vertex-vertex"``, ``"vertex-edge"`` or ``"edge-vertex"``;
        * ``features``: pairs such as ``("face 0", "vertex 2")``.

        With ``jacobians=True``, also ``point_jacobians`` (N, 3, nv),
        ``normal_jacobians`` (N, 3, nv) and ``distance_jacobians`` (N, nv): exact
        derivatives with respect to q in the tangent space (column k: along
        ``q ⊕ ε e_k``), each contact keeping its feature pair.

        :raises InputError: ``q`` has the wrong length or holds NaN/inf, or ``margin``
            is negative or not finite.
        """
    def __eq__(self, other: object) -> bool: ...

class ModelBuilder:
    """Builds a :class:`Model` from links (bodies) and joints, URDF style.

    Methods return the builder, so calls chain::

        m = (ModelBuilder("pendulum")
             .add_link("bob", mass=1.0, com=(0, 0, -1))
             .add_joint("hinge", "revolute", "world", "bob", axis=(0, 1, 0))
             .build())
    """

    def __init__(self, name: str) -> None: ...
    @property
    def name(self) -> str:
        """The model name."""
    def add_link(
        self,
        name: str,
        mass: float = 0.0,
        com: ArrayLike = (0.0, 0.0, 0.0),
        inertia: Optional[ArrayLike] = None,
    ) -> "ModelBuilder":
        """Adds a link.

        :param com: centre of mass in the link frame.
        :param inertia: rotational inertia about the centre of mass, a 3x3 matrix or
            ``(ixx, ixy, ixz, iyy, iyz, izz)``; zero when omitted.

        A link named ``"world"`` stands for the world frame. Mass and inertia are
        validated by :meth:`build`.
        """
    def add_joint(
        self,
        name: str,
        type: str,
        parent: str,
        child: str,
        axis: ArrayLike = (1.0, 0.0, 0.0),
        origin_xyz: ArrayLike = (0.0, 0.0, 0.0),
        origin_rpy: ArrayLike = (0.0, 0.0, 0.0),
        lower: Optional[Union[float, ArrayLike]] = None,
        upper: Optional[Union[float, ArrayLike]] = None,
        velocity: Optional[Union[float, ArrayLike]] = None,
        effort: Optional[Union[float, ArrayLike]] = None,
        damping: float = 0.0,
        stiffness: float = 0.0,
        rest: Optional[Union[float, ArrayLike]] = None,
        armature: float = 0.0,
        friction: float = 0.0,
        pitch: float = 0.0,
        axis2: Optional[ArrayLike] = None,
    ) -> "ModelBuilder":
        """Adds a joint from link ``parent`` (or ``"world"``) to link ``child``.

        :param type: ``fixed``, ``revolute``, ``continuous``, ``prismatic``,
            ``spherical``, ``free`` (or ``floating``), ``planar`` (``axis`` is the
            plane normal), ``universal`` (``axis`` then ``axis2``, required) or
            ``screw`` (``pitch`` metres per radian).
        :param origin_xyz: position of the joint frame in the parent frame.
        :param origin_rpy: roll, pitch, yaw of the joint frame (URDF convention).
        :param lower: lower position limit, a number or one per coordinate (nq).
        :param upper: upper position limit, a number or one per coordinate (nq).
        :param velocity: velocity limit, a number or one per degree of freedom (nv).
        :param effort: effort limit, a number or one per degree of freedom (nv).
        :param stiffness: spring stiffness; the spring pulls toward ``rest``
            (default: the neutral configuration).
        :raises InputError: unknown ``type``, malformed vectors, wrong limit lengths.
        """
    def add_collision(
        self,
        link: str,
        shape: str,
        radius: Optional[float] = None,
        half_extents: Optional[ArrayLike] = None,
        length: Optional[float] = None,
        vertices: Optional[ArrayLike] = None,
        triangles: Optional[ArrayLike] = None,
        origin_xyz: ArrayLike = (0.0, 0.0, 0.0),
        origin_rpy: ArrayLike = (0.0, 0.0, 0.0),
        friction: float = 0.8,
        restitution: float = 0.0,
        group: int = 1,
        mask: int = 0xFFFFFFFF,
        name: Optional[str] = None,
        viscous_friction: float = 0.0,
    ) -> "ModelBuilder":
        """Adds a collision shape to ``link`` (added before with :meth:`add_link`), or
        to the world with ``link="world"`` (static geometry).

        :param shape: ``plane`` (the half-space z <= 0 of the shape frame), ``sphere``
            (``radius``), ``box`` (``half_extents``), ``capsule`` (``radius`` and the
            ``length`` of its segment along z), ``cylinder`` (``radius``, ``length``
            along z; collides as a 16-sided prism), ``convex_mesh`` or ``mesh``
            (``vertices`` (V, 3) and ``triangles`` (T, 3), counter-clockwise seen from
            outside; a ``mesh`` on a moving link collides as the convex hull of its
            vertices, on the world or a link welded to it as a static triangle mesh).
        :param origin_xyz: position of the shape frame in the link frame.
        :param origin_rpy: roll, pitch, yaw of the shape frame (URDF convention).
        :param friction: Coulomb friction coefficient μ (Coulomb contact model).
        :param restitution: coefficient of restitution in [0, 1].
        :param viscous_friction: viscous friction coefficient μ_v (N·s/m), used by the
            ``"viscous"`` contact model only.
        :param group: the collision groups (bits) the shape belongs to.
        :param mask: the groups it collides with; two shapes collide when
            ``(group_a & mask_b) != 0 and (group_b & mask_a) != 0``.
        :raises InputError: unknown ``shape`` or link, a missing size, malformed arrays.
            Invalid sizes (negative, NaN, a non-convex ``convex_mesh``) raise
            :class:`ModelError` from :meth:`build`.
        """
    def set_self_collision(self, root_link: str, enabled: bool) -> "ModelBuilder":
        """Self-collision of the articulation rooted at ``root_link`` (a link attached
        to the world). Default: on (with parent/child pairs skipped)."""
    def exclude_collision_pair(self, link_a: str, link_b: str) -> "ModelBuilder":
        """The shapes of ``link_a`` and ``link_b`` never collide with each other."""
    def set_skip_parent_child(self, skip: bool) -> "ModelBuilder":
        """Whether shapes on a parent and a child rigid group are skipped (default ``True``)."""
    def floating_base(self, floating: bool = True) -> "ModelBuilder":
        """Attach a parentless root link with a free joint (default: welded)."""
    def set_gravity(self, g: ArrayLike) -> "ModelBuilder":
        """Sets gravity in world coordinates (default ``(0, 0, -9.81)``)."""
    def build(self) -> Model:
        """Orders the tree depth-first and validates it.

        :raises ModelError: the model is invalid (duplicate or unknown names,
            negative mass, zero axis, loops, ...).
        """

# The ``contact`` argument: None, a bool, or a dict of contact options (see Simulator).
ContactArg = Union[None, bool, Dict[str, Any]]

class Simulator:
    """Semi-implicit Euler stepping on the configuration manifold, with contacts, joint
    limits and joint friction solved as a boxed LCP at the velocity level. Also steps a
    :class:`World` (``Simulator(world)``): ``step``, ``rollout``, ``dt``, ``nq``, ``nv``,
    ``world`` and ``reset_warm_start`` apply, with the world's controls, records
    (:class:`WorldStepRecord`) and tapes (:class:`WorldTape`); the rest raises ``TypeError``."""

    def __init__(
        self,
        model: Union[Model, "World"],
        dt: Optional[float] = None,
        gravity: Optional[ArrayLike] = None,
        velocity_products: str = "midpoint",
        tolerance: float = 1e-13,
        max_iterations: int = 50,
        params: Union["ParamSpec", Sequence[str], str, None] = None,
        contact: ContactArg = None,
        max_speed: float = 1e4,
    ) -> None:
        """:param gravity: overrides the model's gravity when given.
        :param velocity_products: ``"midpoint"`` evaluates Coriolis/gyroscopic forces at
            ``(v + v⁺)/2`` (conserves a free body's energy and angular momentum; a few
            fixed-point iterations per step), ``"explicit"`` at ``v`` (one ABA per step).
        :param tolerance: convergence threshold of the midpoint iteration.
        :param max_iterations: midpoint iterations before falling back to the explicit
            evaluation (counted in :attr:`stats`); an integer >= 1.
        :param max_speed: the divergence guard: a step whose result has a generalized
            speed above it (rad/s or m/s) raises :class:`NumericalError` naming the joint
            (``float("inf")`` turns it off).

        :param params: the differentiable parameters θ that recorded steps differentiate
            against: a :class:`ParamSpec` or parameter names (parsed on the simulated model).
        :param contact: the constraint stage (contacts, joint limits, joint friction):
            ``None`` (defaults, enabled), ``True``/``False``, or a dict of some of

            - ``enabled`` (bool, True): solve contacts and joint limits at all;
            - ``model`` (``"coulomb"``, ``"no_slip"`` or ``"viscous"``; ``"coulomb"``):
              the friction model of the contacts — Coulomb friction pyramids, no
              tangential slip at all, or purely viscous friction with each shape's
              ``viscous_friction`` (see docs/contact.md);
            - ``solver`` (``"auto"``, ``"boxed_lcp"`` or ``"ncp"``; ``"auto"``): ``"auto"``
              uses the pivoting solver of the no-slip and viscous models where it applies;
              ``"ncp"`` the non-smooth Newton solver with isotropic friction cones
              (docs/ncp.md), its settings in ``ncp``;
            - ``ncp`` (dict): ``function`` (``"fischer_burmeister"`` or ``"min_map"``),
              ``max_iterations`` (200), ``tolerance`` (m/s, 1e-12), ``damping`` (0.75),
              ``linear`` (``"direct"``, ``"cr"`` or ``"pcr_gpu"``: conjugate residuals on
              the GPU, docs/gpu.md; ``linear_solver`` is a synonym), ``cr_iterations`` (200),
              ``preconditioner`` (True), ``fallback_sweeps`` (200: where Newton's
              iteration cycles or spends its budget above the tolerance, at most this many sweeps of projected Gauss–Seidel over the cones before the
              result's contact mode is solved exactly; 0: none, the Newton iterate is
              returned; a ``max_iterations`` below 20 is a fixed budget and never falls
              back; docs/ncp.md; each use counts in ``stats["lcp_fallbacks"]``);
            - ``margin`` (m, 5e-3): contacts are created below this signed distance;
            - ``penetration`` (``"split"`` or ``"velocity"``; ``"split"``): remove
              penetrations by a position stage that adds no kinetic energy, or by a
              separating velocity (which launches deeply penetrating bodies; see
              docs/contact.md);
            - ``erp`` (in (0, 1], 1.0): fraction of a penetration removed per step;
            - ``position_regularization`` (≥ 0, 1e-3): regularization ρ of the split
              recovery's contact rows, ``ρ·(1/m_A + 1/m_B)`` with the subtree masses of
              the two sides: a contact the mechanism can hardly move along its normal
              is corrected gradually instead of by a large swing;
            - ``penetration_tolerance`` (m, ≥ 0, 1e-9): penetrations no deeper than
              this do not start the split recovery's position stage (resting bodies
              keep gaps of rounding size); a deeper one corrects every penetrating row;
            - ``normal_compliance`` (≥ 0, 0.0): compliance ρ_n of the velocity stage's
              contact normal rows, ``r = ρ_n·(1/m_A + 1/m_B)``: a contact pressed by the
              impulse ``f_n`` closes at ``r f_n`` within the step (the penetration
              recovery pushes it back); any ρ_n > 0 determines the forces
              of redundant contacts, which makes the NCP solver's steps of a box sliding
              and spinning on four corners differentiable (docs/ncp.md);
            - ``friction_compliance`` (≥ 0, 0.0): compliance ρ_t of the Coulomb friction
              rows, ``ρ_t·(1/m_A + 1/m_B)``: a sticking contact creeps at
              ``ρ_t f_t (1/m_A + 1/m_B)``; with ``normal_compliance`` it determines the
              forces of boxes sticking on four corners (an arm pushing a box, docs/ncp.md);
            - ``restitution_threshold`` (m/s, 0.05): slower approaches do not bounce;
            - ``joint_limit_margin`` (1e-2): limit rows within this distance of a limit;
            - ``warm_start`` (bool, True): guess the LCP's classification from the last step;
            - ``bounce_gradients`` (``"discrete"`` or ``"continuous_time"``): Jacobians of
              bouncing steps, exact or DiffDART §6's continuous-time correction;
            - LCP solver: ``tolerance`` (1e-10), ``max_pivots`` (0: automatic),
              ``pgs_iterations`` (500), ``pgs_tolerance`` (1e-12), ``standardize`` (bool,
              True: minimum-norm impulses), ``friction_iterations`` (20), ``work_limit``
              (1e9: estimated multiply–adds one island's search may spend after its warm
              start or first guess; then it accepts raw solutions and stops pivoting,
              counted in :attr:`stats` ``work_limited_solves``; ``float("inf")``: no bound).

            The other keys keep their defaults; :attr:`contact_options` lists them all.

        :param model: a :class:`Model`, or a :class:`World` (then no other option may be
            given but ``dt`` equal to the world's: the world holds its options).
        :param dt: the time step (default 1e-3 for a model).
        :raises InputError: ``dt`` is not positive and finite, an option is invalid (an
            unknown ``contact`` key, a value of the wrong type or out of range), a
            parameter name is unknown, or an option is given with a world.
        :raises TypeError: ``model`` is neither a :class:`Model` nor a :class:`World`.
        """
    @property
    def world(self) -> Optional["World"]:
        """The :class:`World` this simulator steps; None for a simulator of a model."""
    @property
    def nq(self) -> int:
        """The length of the configuration vector."""
    @property
    def nv(self) -> int:
        """The length of the velocity vector."""
    @property
    def params(self) -> "ParamSpec":
        """The differentiable parameters θ of recorded steps (empty by default)."""
    @property
    def options(self) -> Dict[str, Any]:
        """Every option: ``dt``, ``gravity`` (the override or None), ``velocity_products``,
        ``tolerance``, ``max_iterations``, ``max_speed`` and ``contact`` (as :attr:`contact_options`);
        ``Simulator(model, **sim.options, params=sim.params)`` makes an equal simulator."""
    @property
    def contact_options(self) -> Dict[str, Any]:
        """The constraint stage's options: every key the ``contact`` argument accepts."""
    @property
    def stats(self) -> Dict[str, int]:
        """Counters since construction: ``steps``, ``midpoint_iterations``,
        ``midpoint_fallbacks``, ``lcp_solves`` (steps with constraint rows),
        ``warm_start_hits`` (LCP solves whose warm-start guess was accepted),
        ``lcp_fallbacks`` (a solver method failed and the next was tried),
        ``unstandardized_solves`` (boxed-LCP solutions that are not the minimum-norm one),
        ``ppm_solves`` (constraint solves by the pivoting solver of the ``"no_slip"`` and
        ``"viscous"`` contact models), ``position_corrections`` (steps whose position stage
        removed a penetration without adding velocity), ``limit_resolves`` (re-solves of the
        joint-limit loop), ``limit_violations`` (steps that left a joint limit violated beyond
        the documented tolerance), ``inexact_solves`` (steps whose LCP solution misses the LCP
        tolerance), ``relaxed_solves`` (steps whose LCP had no solution with its penetration
        recovery and bounce biases and was solved without them), ``ncp_solves`` (steps solved
        by the NCP solver), ``newton_iterations`` (their Newton iterations), and
        ``gpu_linear_solves`` / ``gpu_fallbacks`` (their Newton linear systems solved on the
        GPU with ``"ncp": {"linear_solver": "pcr_gpu"}``, and those solved on the CPU
        instead because no GPU was available; docs/gpu.md), ``work_limited_solves`` (steps
        in which a boxed-LCP island spent its ``work_limit``; docs/lcp.md)."""
    def last_constraints(self) -> Optional[Dict[str, Any]]:
        """The constraint stage of the last step, recorded or not (see
        :attr:`StepRecord.constraints`); None when it had no rows or before any step."""
    def reset_warm_start(self) -> None:
        """Forgets the previous step's classification: the next LCP starts cold."""
    @property
    def dt(self) -> float:
        """The time step."""
    @property
    def model(self) -> Model:
        """The simulated model (gravity override applied)."""
    def contacts(self, q: ArrayLike, margin: float = 0.0, jacobians: bool = False) -> Dict[str, Any]:
        """The contacts of the simulated model at ``q``; see :meth:`Model.contacts`."""
    @overload
    def step(
        self,
        q: ArrayLike,
        v: ArrayLike,
        tau: ArrayLike,
        wrenches: Optional[ArrayLike] = None,
        record: Literal[False] = False,
    ) -> Tuple[Vector, Vector]: ...
    @overload
    def step(
        self,
        q: ArrayLike,
        v: ArrayLike,
        tau: ArrayLike,
        wrenches: Optional[ArrayLike] = None,
        *,
        record: Literal[True],
    ) -> Tuple[Vector, Vector, "StepRecord"]: ...
    def step(
        self,
        q: ArrayLike,
        v: ArrayLike,
        tau: ArrayLike,
        wrenches: Optional[ArrayLike] = None,
        record: bool = False,
    ) -> Union[Tuple[Vector, Vector], Tuple[Vector, Vector, "StepRecord"]]:
        """Advances one step; returns the next ``(q, v)``, or ``(q, v, record)`` with
        ``record=True`` (a :class:`StepRecord` for Jacobians and VJPs with respect to
        ``q, v, tau`` and :attr:`params`). The GIL is released during the step.

        :param wrenches: optional world-frame body wrenches, shape (nbodies, 6).
        """
    @overload
    def rollout(
        self, q: ArrayLike, v: ArrayLike, taus: ArrayLike, record: Literal[False] = False
    ) -> Tuple[Matrix, Matrix]: ...
    @overload
    def rollout(
        self, q: ArrayLike, v: ArrayLike, taus: ArrayLike, record: Literal[True]
    ) -> Tuple[Matrix, Matrix, "Tape"]: ...
    def rollout(
        self, q: ArrayLike, v: ArrayLike, taus: ArrayLike, record: bool = False
    ) -> Union[Tuple[Matrix, Matrix], Tuple[Matrix, Matrix, "Tape"]]:
        """Runs ``T = len(taus)`` steps under torques ``taus`` (shape (T, nv)), in Rust.

        Returns ``(Q, V)``, the states after each step, shapes (T, nq) and (T, nv); with
        ``record=True``, ``(Q, V, tape)`` where ``tape`` is a :class:`Tape` of the T steps.
        """
    def rollout_batch(
        self,
        q0: ArrayLike,
        v0: ArrayLike,
        taus: ArrayLike,
        thetas: Optional[ArrayLike] = None,
        record: bool = False,
        threads: Optional[int] = None,
    ) -> Union[Tuple[Any, Any], Tuple[Any, Any, List["Tape"]]]:
        """``B`` independent rollouts of ``T`` steps, in parallel in Rust (rayon; the GIL is
        released): start states ``q0`` (B, nq), ``v0`` (B, nv), torques ``taus`` (B, T, nv),
        optionally per-rollout values ``thetas`` (B, np) of this simulator's ``params``.

        Each rollout runs on its own copy of the model and options, so the results equal
        sequential :meth:`rollout` calls for any ``threads`` (``None``: all cores). Returns
        ``(Q, V)`` of shapes (B, T, nq) and (B, T, nv); with ``record=True``
        ``(Q, V, tapes)``, a :class:`Tape` per rollout.

        :raises InputError: wrong shapes, NaN, an invalid ``theta`` (the message names the
            rollout), ``threads`` not an integer >= 1.
        """

class ParamSpec:
    """The differentiable parameters θ of a model, by name.

    Names: ``"mass:LINK"`` (1 value), ``"com:LINK"`` (x, y, z), ``"inertia:LINK"``
    (xx, yy, zz, xy, xz, yz about the COM), ``"damping:JOINT"``, ``"stiffness:JOINT"``,
    ``"armature:JOINT"`` (one per degree of freedom), ``"rest:JOINT"`` (one per
    coordinate; not for ball/free joints), ``"placement:JOINT"`` (x, y, z of the joint
    origin in the parent), ``"gravity"`` (x, y, z), ``"friction:LINK"`` and
    ``"restitution:LINK"`` (1 value each: the material of the link's collision shapes;
    ``LINK = "world"`` for shapes fixed to the world). Blocks are laid out in θ in the
    order given::

        spec = ParamSpec(model, ["mass:link3", "gravity"])
        theta = spec.values(model)
        theta[0] += 0.5
        heavier = spec.apply(model, theta)

    or by name: ``spec.get(model, "mass:link3")``, ``spec.set(model, {"mass:link3": 2.0})``
    (a new model), ``spec.as_dict(model)``, ``theta[spec.slice("gravity")]``. A spec
    belongs to the model it was made for (or one with the same link and joint names).
    """

    def __init__(self, model: Model, names: Union[Sequence[str], str]) -> None:
        """:raises InputError: an unknown kind, link or joint, or a name given twice."""
    @staticmethod
    def all(model: Model) -> "ParamSpec":
        """Every differentiable parameter of ``model`` (the names of :meth:`available`)."""
    @staticmethod
    def available(model: Model) -> List[str]:
        """Every name the constructor accepts for ``model``."""
    @property
    def names(self) -> List[str]:
        """One name per scalar of θ (``"mass:link3"``, ``"com:link3.y"``, ``"damping:hip[1]"``, ``"gravity.z"``)."""
    @property
    def entries(self) -> List[str]:
        """The block names, as given to the constructor."""
    def values(self, model: Model) -> Vector:
        """The current θ of ``model``, shape (len(self),).

        :raises InputError: the spec does not fit ``model``.
        """
    def apply(self, model: Model, theta: ArrayLike) -> Model:
        """A copy of ``model`` with θ set to ``theta``, validated like a built model.

        :raises InputError: ``theta`` has the wrong length or is not finite.
        :raises ModelError: the resulting model is invalid (e.g. a negative mass).
        """
    def get(self, model: Model, name: str) -> Union[float, Vector]:
        """The value of one parameter of ``model`` by name: a float for a one-number name
        (``"mass:link1"``, ``"com:link1.y"``, ``"damping:hip[1]"``, ``"gravity.z"``), a
        float64 array for a vector block (``"com:link1"`` (3,), ``"inertia:link1"`` (6,),
        ``"gravity"`` (3,), ``"damping:hip"`` (the joint's nv,)).

        ``name`` is one of :attr:`entries` or :attr:`names`.

        :raises InputError: ``name`` is not in this spec (the message suggests the
            closest names, or says how to add a valid name of the model), or the spec
            was made for another model.
        """
    def set(self, model: Model, values: Mapping[str, Union[float, ArrayLike]]) -> Model:
        """A copy of ``model`` with the named parameters replaced (models are immutable;
        ``model`` is unchanged)::

            spec = ParamSpec(model, ["mass:link1", "com:link1"])
            heavier = spec.set(model, {"mass:link1": 2.0, "com:link1.z": 0.1})

        Keys are names of :attr:`entries` or :attr:`names`; values are numbers for
        one-number names and arrays of the block's length otherwise. Parameters not named
        keep their values.

        :raises InputError: an unknown name, a value of the wrong shape or not finite.
        :raises ModelError: the resulting model is invalid (e.g. a negative mass).
        """
    def as_dict(self, model: Model) -> Dict[str, Union[float, Vector]]:
        """``{entry: value}`` for every block of this spec in ``model`` (see :meth:`get`);
        :meth:`set` accepts it back."""
    def slice(self, name: str) -> "builtins.slice":
        """The slice of θ holding parameter ``name`` (an entry or a per-scalar name), e.g.
        ``theta[spec.slice("com:link1")]``.

        :raises InputError: ``name`` is not in this spec.
        """
    def __len__(self) -> int: ...
    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is one of :attr:`entries` or :attr:`names`."""
    def __eq__(self, other: object) -> bool: ...

class StepRecord:
    """One recorded step (``Simulator.step(..., record=True)``).

    Self-contained: it keeps the model, θ and the step's inputs and outputs. Rows and
    columns for ``q`` are in the tangent space (``q ⊕ ε eᵢ``; nv entries).
    """

    def jacobians(self) -> Dict[str, Matrix]:
        """The Jacobian blocks: ``"dq_dq"``, ``"dq_dv"``, ``"dq_dtau"``, ``"dv_dq"``,
        ``"dv_dv"``, ``"dv_dtau"`` (nv × nv) and ``"dq_dtheta"``, ``"dv_dtheta"`` (nv × np),
        where ``dq`` rows are ``q⁺`` and ``dv`` rows ``v⁺``."""
    def vjp(
        self, grad_q_next: ArrayLike, grad_v_next: ArrayLike, strategy: Literal["exact", "loss_driven"] = "exact"
    ) -> Dict[str, Any]:
        """Vector-Jacobian product: given ``∂ℓ/∂q⁺`` (tangent, nv) and ``∂ℓ/∂v⁺`` (nv),
        returns ``{"q", "v", "tau", "theta"}``, the gradients of ℓ with respect to the
        step's inputs (``Jᵀλ`` without forming J); with ``strategy="loss_driven"`` also
        ``"strategy"``, the counters ``{"constrained_steps", "loss_driven_tried", "loss_driven_used",
        "inexact_steps"}`` (steps whose LCP solution was an inexact last-resort result).

        :param strategy: ``"exact"`` (the derivatives of the recorded step) or
            ``"loss_driven"`` (DiffDART §4.4: where the loss would rather see another contact
            mode, the VJP in that mode when it is larger; a search direction, not a derivative).
        :raises InputError: wrong shapes or an unknown strategy.
        """
    @property
    def q(self) -> Vector:
        """Configuration before the step, shape (nq,)."""
    @property
    def v(self) -> Vector:
        """Velocity before the step, shape (nv,)."""
    @property
    def tau(self) -> Vector:
        """Joint torques of the step, shape (nv,)."""
    @property
    def q_next(self) -> Vector:
        """Configuration after the step, shape (nq,)."""
    @property
    def v_next(self) -> Vector:
        """Velocity after the step, shape (nv,)."""
    @property
    def dt(self) -> float:
        """The time step."""
    @property
    def nparams(self) -> int:
        """Number of differentiable parameters θ."""
    @property
    def fell_back(self) -> bool:
        """True when the midpoint iteration fell back to the explicit evaluation
        (the step is then differentiated as an explicit step)."""
    @property
    def solved_exactly(self) -> bool:
        """False when the constraint stage kept an inexact last-resort LCP solution
        (a PGS result above the tolerance): the step's Jacobians are then those of the
        approximate solution's classification, not exact derivatives."""
    @property
    def constraints(self) -> Optional[Dict[str, Any]]:
        """The constraint stage of the step; None when it had no rows (contact disabled
        or nothing within the margins). Rows come three per contact (normal, friction
        along ``t1``, friction along ``t2``), then joint-limit and joint-friction rows.

        Per row (m): ``impulses`` (m,), ``states`` (``"clamping"``, ``"separating"``,
        ``"at_lower"``, ``"at_upper"``, ``"tied"``), ``kinds`` (``"contact_normal"``,
        ``"contact_friction"``, ``"joint_lower"``, ``"joint_upper"``,
        ``"velocity_upper"``, ``"velocity_lower"``, ``"joint_friction"``), ``contact`` (int, -1 for joint rows), ``direction``
        (friction direction 0/1, else -1), ``dof`` (int, -1 for contact rows),
        ``joints`` (joint name of joint rows, else None), ``bounds`` (m, 2; friction rows
        ``±μ f_n`` at the solution), ``bias`` (m,).

        Per contact (nc): ``points`` (nc, 3), ``normals`` (nc, 3; from body A to body B),
        ``distances`` (signed, negative in penetration), ``depths`` (``-distances``),
        ``bodies`` (pairs of body names, ``"world"`` for world shapes), ``shapes``
        (nc, 2), ``contact_kinds`` (``"vertex-face"``, ...), ``friction``,
        ``restitution`` (the pair's coefficients), ``bounce`` (bools),
        ``approach_velocity`` (normal velocity at the start of the step).

        And ``v_free`` (nv,), the velocity before the impulse, and ``lcp``: ``path``
        (``"empty"``, ``"warm_start"``, ``"first_guess"``, ``"ppm"``, ``"dantzig"``, ``"lemke"``, ``"pgs"``,
        ``"newton"``), ``islands``, ``pivots``, ``pgs_iterations``, ``residual``,
        ``warm_start_attempted``, ``warm_start_hit``, ``fallbacks``, ``standardized``,
        ``newton_iterations``, ``gpu_linear_solves``, ``gpu_fallbacks``, ``work_limited``
        (islands whose search spent the ``work_limit``);
        ``passes`` (LCP solves of the step: 1 plus the re-solves of the limit loop and a
        relaxation), ``relaxed`` (the LCP had no accurate solution with its penetration
        recovery and bounce biases and was solved without them), ``correction_dropped``
        (the split recovery's position stage had no solution and was skipped) and
        ``limit_violations``: ``(kind, dof, amount)`` for every limit left violated beyond
        the documented tolerance (rad or m; rad/s or m/s).
        """

class Tape:
    """A recorded rollout: the :class:`StepRecord` of consecutive steps."""

    def __init__(self) -> None: ...
    def append(self, record: StepRecord) -> None:
        """Appends the record of the next step.

        Raises ``InputError`` unless ``record`` continues the tape: same model and time
        step, and its start state ``(q, v)`` exactly the last record's ``(q_next, v_next)``."""
    def __len__(self) -> int: ...
    def __getitem__(self, t: int) -> StepRecord:
        """The record of step ``t`` (negative indices count from the end)."""
    def backward(
        self,
        grad_states: Optional[Tuple[ArrayLike, ArrayLike]] = None,
        grad_controls: Optional[ArrayLike] = None,
        strategy: Literal["exact", "loss_driven"] = "exact",
    ) -> Dict[str, Any]:
        """Backpropagates ``L = Σ_t ℓ_t(x_t, τ_t) + ℓ_T(x_T)`` through the tape.

        :param grad_states: ``(gq, gv)``, two arrays of shape (T+1, nv): the partial
            derivatives ``∂L/∂q_t`` (tangent) and ``∂L/∂v_t`` for t = 0..T; None: zero.
        :param grad_controls: the partials ``∂L/∂τ_t``, shape (T, nv); None: zero.
        :param strategy: the contact strategy, as in :meth:`StepRecord.vjp`.
        :returns: the total derivatives ``{"q0" (nv,), "v0" (nv,), "tau" (T, nv), "theta" (np,)}``
            and, with ``strategy="loss_driven"``, ``"strategy"``: its counters summed over the steps.
        :raises InputError: the tape is empty, a shape is wrong or the strategy is unknown.
        :raises StictionError: the records come from different models or parameter specs.
        """
    @staticmethod
    def vjp_batch(
        tapes: Sequence["Tape"],
        grad_q: Optional[ArrayLike] = None,
        grad_v: Optional[ArrayLike] = None,
        q0: Optional[ArrayLike] = None,
        threads: Optional[int] = None,
    ) -> Dict[str, np.ndarray]:
        """Vector-Jacobian products of B recorded rollouts of T steps at once, on coordinates, in
        parallel (rayon, GIL released); the reverse pass of ``stiction.torch`` and ``stiction.jax``.

        :param tapes: B tapes of the same model, parameters and length (a tape may repeat).
        :param grad_q: ``∂L/∂q_t`` on the coordinates of the states after each step, (B, T, nq);
            mapped to the tangent space at the recorded states. None: zero.
        :param grad_v: ``∂L/∂v_t``, (B, T, nv). None: zero.
        :param q0: the start coordinates as given by the caller (any quaternion length), (B, nq);
            default: the tapes' own start states.
        :returns: ``{"q0" (B, nq) on coordinates, "v0" (B, nv), "tau" (B, T, nv), "theta" (B, np)}``.
        :raises InputError: no tapes, empty or mismatched tapes, wrong shapes, non-finite input.
        """

class Particles:
    """Point masses with spherical collision shapes, under gravity and control forces: a
    system of a :class:`World` (immutable).

    Particle ``i`` has position ``q[3i:3i+3]``, velocity ``v[3i:3i+3]`` and control force
    ``u[3i:3i+3]`` (world frame, N); one step is semi-implicit Euler
    ``v⁺ = v + h (g + u/m) + M⁻¹ Jᵀ f``, ``x⁺ = x + h v⁺``.
    """

    def __init__(
        self,
        masses: ArrayLike,
        radii: Union[float, ArrayLike],
        friction: float = 0.8,
        restitution: float = 0.0,
        gravity: Optional[ArrayLike] = None,
        self_collision: bool = True,
    ) -> None:
        """:param masses: the masses (kg), finite and positive, shape (n,).
        :param radii: the radii (m), finite and non-negative, shape (n,) or one number.
        :param friction: Coulomb friction coefficient μ of every particle.
        :param restitution: coefficient of restitution in [0, 1] (not in the world step yet).
        :param gravity: (3,), default ``(0, 0, -9.81)``.
        :param self_collision: whether the particles collide with each other.
        :raises InputError: mismatched lengths or invalid values (e.g. a negative mass).
        """
    def __len__(self) -> int:
        """The number of particles."""
    @property
    def masses(self) -> Vector:
        """The masses (kg), shape (n,)."""
    @property
    def radii(self) -> Vector:
        """The radii (m), shape (n,)."""
    @property
    def gravity(self) -> Vector:
        """The gravity (m/s²), shape (3,)."""

class StaticGeometry:
    """Shapes fixed in the world (no degrees of freedom): a system of a :class:`World`, and
    the ``None`` side of its contacts. Build one with :meth:`ground`."""

    @staticmethod
    def ground(
        friction: float = 0.8, restitution: float = 0.0, tilt: float = 0.0, height: float = 0.0
    ) -> "StaticGeometry":
        """The ground: the half-space ``z <= 0``; with ``tilt`` (rad) rotated about the world
        y axis (an incline going down towards +x for a positive tilt), then raised by
        ``height`` (m).

        :raises InputError: a negative or non-finite friction, a restitution outside [0, 1],
            a non-finite tilt or height.
        """
    @property
    def num_shapes(self) -> int:
        """The number of shapes."""

class World:
    """Several systems stepped together through one constraint stage (immutable).

    Contacts between any two systems (and within a system that allows it) become the rows
    ``J_r v = W_r · (V_B − V_A)`` of one boxed LCP over ``A = Σ_s J_s M̃_s⁻¹ J_sᵀ``. The
    global vectors concatenate the systems' blocks in the order given: ``q = [q_0; q_1; …]``,
    likewise ``v`` and the controls ``u`` (joint torques of a :class:`Model`, forces of
    :class:`Particles`, vertex forces of a soft body, nothing for :class:`StaticGeometry`);
    :meth:`blocks` gives the slices of a system. Gradients with respect to ``q`` are
    tangent (nv entries, along ``retract(q, ε eᵢ)``). Methods that "change" a world
    (:meth:`add_soft_body`) return a new one.
    """

    def __init__(
        self,
        systems: Sequence[Union[Model, Particles, StaticGeometry, "SoftSystem", "SoftBody"]],
        dt: float = 1e-3,
        margin: Optional[float] = None,
        erp: Optional[float] = None,
        friction: str = "coulomb",
        solver: str = "boxed_lcp",
    ) -> None:
        """:param systems: the systems, in the order of the global vectors; a :class:`Model`
            steps as an articulation with its own gravity; a :class:`SoftBody` as a
            :class:`SoftSystem` with the default settings (friction 0.8, point contacts,
            backward Euler).
        :param dt: the time step (s).
        :param margin: contacts are created for pairs closer than this (m); default as the
            simulator's contact options.
        :param erp: penetration recovery rate in [0, 1] (a penetrating contact gets the
            normal bias ``erp·φ/h``, a separated one ``φ/h``); default as the simulator's.
        :param friction: ``"coulomb"`` (two rows per contact boxed by ±μ f_n) or
            ``"no_slip"`` (two equality rows per contact).
        :param solver: ``"boxed_lcp"``, ``"ppm"`` (unilateral and equality rows only:
            no-slip worlds) or ``"ncp"`` (non-smooth Newton, docs/ncp.md: each contact's two
            friction rows form an isotropic Coulomb cone instead of a box; gradients by the
            implicit-function theorem in the step's contact mode).
        :raises TypeError: a system of another kind.
        :raises InputError: invalid options.
        """
    def add_soft_body(
        self,
        body: "SoftBody",
        friction: float = 0.8,
        radius: float = 0.0,
        integrator: str = "backward_euler",
        tolerance: float = 1e-10,
        max_iterations: int = 50,
        line_search: bool = True,
        linear_solver: str = "direct",
    ) -> "World":
        """A new world: this one's systems followed by ``body`` as the last system (a
        :class:`SoftSystem` with these settings), with the same ``dt``, ``margin``, ``erp``,
        friction model and solver. This world is unchanged (worlds are immutable); the new
        world's ``q``, ``v`` and ``u`` end with the body's block (``blocks(-1)``).

        :raises InputError: invalid settings (see :class:`SoftSystem`).
        """
    def weld(
        self, q: ArrayLike, system: int, vertices: Sequence[int], to: Optional[Tuple[int, int]] = None
    ) -> "World":
        """A new world with ``vertices`` (elements of system ``system``, e.g. a soft body's
        vertices) welded where they are at configuration ``q`` to element ``to = (system,
        element)`` (a body of an articulation, a vertex, a particle) or, with ``to=None``, to
        the world: three bilateral constraint rows per vertex, added to the attachments
        already there.

        :raises InputError: indices out of range, a ``q`` of the wrong length.
        """
    @property
    def num_attachments(self) -> int:
        """The number of attachments (three constraint rows each, after the contacts')."""
    @property
    def param_names(self) -> List[str]:
        """The names of the differentiable parameters θ, ``"s/name"`` for parameter ``name``
        of system ``s`` (a soft body's ``youngs_modulus:TAG``, ``poisson:TAG``,
        ``density:TAG``, ``damping_mass``, ``damping_stiffness``)."""
    def param_values(self) -> Vector:
        """The values of θ."""
    def with_param_values(self, theta: ArrayLike) -> "World":
        """A new world with θ set to ``theta`` (attachments, solver and options kept).

        :raises InputError: a wrong length or a value out of its domain.
        """
    @property
    def nq(self) -> int:
        """The size of the global configuration ``q``."""
    @property
    def nv(self) -> int:
        """The size of the global velocity ``v`` (and of tangent gradients)."""
    @property
    def nu(self) -> int:
        """The size of the global control ``u``."""
    @property
    def dt(self) -> float:
        """The time step (s)."""
    @property
    def margin(self) -> float:
        """The contact margin (m)."""
    @property
    def friction(self) -> str:
        """The friction model, ``"coulomb"`` or ``"no_slip"``."""
    @property
    def solver(self) -> str:
        """The constraint solver's name (``"boxed LCP"`` or ``"PPM"``)."""
    @property
    def erp(self) -> float:
        """The penetration recovery rate."""
    @property
    def num_systems(self) -> int:
        """The number of systems."""
    def collision_shapes(self) -> List[Dict[str, Any]]:
        """Every system's collision shapes, system by system, each a dict as
        :meth:`Model.collision_shapes` (``kind``, ``pose``, ``radius``, ``vertices``,
        ``triangles``) with ``system``, ``shape`` (its index in the system) and ``element``
        (the body, particle or vertex carrying it; ``None`` for static shapes) instead of
        ``body``; ``pose`` is the shape frame on its element (in the world for static shapes)."""
    def shape_poses(self, q: ArrayLike) -> np.ndarray:
        """World poses (4 x 4) of the shapes of :meth:`collision_shapes` at ``q`` (nq,): shape
        (S, 4, 4); at every row of ``Q`` (T, nq): shape (T, S, 4, 4).

        :raises InputError: another shape, a non-finite entry or an invalid configuration.
        """
    def surfaces(self) -> List[npt.NDArray[np.int64]]:
        """The drawn surface of each system, in order: triangles (k, 3) over the system's
        elements — a soft body's boundary triangles (outward normals) over its vertices, whose
        positions are ``q[world.blocks(i)[0]].reshape(-1, 3)`` — and an empty (0, 3) array
        for systems drawn by their collision shapes."""
    @property
    def system_names(self) -> List[str]:
        """A short description of each system, in order."""
    def blocks(self, i: int) -> Tuple["builtins.slice", "builtins.slice", "builtins.slice"]:
        """The slices ``(q_slice, v_slice, u_slice)`` of system ``i`` in the global vectors
        (negative ``i`` counts from the end), e.g. ``q[world.blocks(1)[0]]``.

        :raises IndexError: ``i`` out of range.
        """
    def step(self, q: ArrayLike, v: ArrayLike, u: Optional[ArrayLike] = None) -> Tuple[Vector, Vector]:
        """One step from ``(q, v)`` under the controls ``u`` (None: zero); returns
        ``(q_next, v_next)``.

        :raises InputError: wrong lengths or non-finite values (the message names the system).
        :raises NumericalError: a solver failure or a non-finite result.
        """
    def step_recorded(self, q: ArrayLike, v: ArrayLike, u: Optional[ArrayLike] = None) -> "WorldStepRecord":
        """One step as :meth:`step`, returning its :class:`WorldStepRecord`."""
    def rollout(self, q: ArrayLike, v: ArrayLike, controls: ArrayLike) -> Tuple[Matrix, Matrix, "WorldTape"]:
        """``T`` steps from ``(q, v)`` under ``controls`` (T, nu); returns ``(Q, V, tape)``
        with the states after each step, shapes (T, nq) and (T, nv), and the
        :class:`WorldTape` of the steps.

        :raises InputError: wrong shapes or non-finite values (the message names the step).
        """
    def rollout_batch(
        self,
        q0: ArrayLike,
        v0: ArrayLike,
        controls: ArrayLike,
        thetas: Optional[ArrayLike] = None,
        threads: Optional[int] = None,
    ) -> Tuple[Any, Any, List["WorldTape"]]:
        """``B`` independent recorded rollouts, in parallel in Rust (rayon; the GIL is
        released): start states ``q0`` (B, nq), ``v0`` (B, nv), controls ``controls``
        (B, T, nu), optionally per-rollout values ``thetas`` (B, len(param_names)) of θ
        (rollout b then runs on ``with_param_values(thetas[b])``).

        Each rollout equals :meth:`rollout` bit for bit, for any ``threads`` (``None``: all
        cores). Returns ``(Q, V, tapes)``: shapes (B, T, nq) and (B, T, nv), and a
        :class:`WorldTape` per rollout.

        :raises InputError: wrong shapes, non-finite values, a failing rollout (the message
            names it and the step), ``threads`` not an integer >= 1.
        :raises ModelError: a θ outside its domain.
        """
    def normalize(self, q: ArrayLike) -> Vector:
        """``q`` (nq) with every quaternion normalised (articulations with ball or free joints;
        the other systems' coordinates are kept).

        :raises InputError: a wrong length, non-finite values, a quaternion far from unit
            length (norm outside [0.5, 2]).
        """
    def tangent_gradient(self, q: ArrayLike, g: ArrayLike) -> Vector:
        """A gradient ``g`` (nq) on the coordinates of ``q`` as a tangent gradient (nv),
        ``Eᵀ g`` with ``E = ∂(q ⊕ δ)/∂δ``, system by system (:meth:`Model.tangent_gradient`
        for an articulation, the identity for particles and soft bodies).

        :raises InputError: wrong lengths, non-finite values, a quaternion far from unit length.
        """
    def coordinate_gradient(self, q: ArrayLike, g: ArrayLike) -> Vector:
        """A tangent gradient ``g`` (nv) at ``q`` as a gradient on the coordinates of ``q``
        (nq) for ``q ↦ ℓ(normalize(q))``, system by system (:meth:`Model.coordinate_gradient`
        for an articulation: no component along a quaternion; the identity otherwise).

        :raises InputError: wrong lengths, non-finite values, a quaternion far from unit length.
        """
    def retract(self, q: ArrayLike, dq: ArrayLike) -> Vector:
        """``q ⊕ dq``: moves ``q`` (nq) along the tangent vector ``dq`` (nv), system by system."""
    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Vector:
        """``q1 ⊖ q0``: the tangent vector (nv) with ``retract(q0, difference(q0, q1)) == q1``."""

class SoftSystem:
    """A :class:`SoftBody` as a system of a :class:`World`, with explicit contact and step
    settings (immutable).

    Its boundary vertices (:attr:`contact_vertices`) collide as spheres of :attr:`radius`
    (0: points) with Coulomb :attr:`friction` against the ground, static geometry and the
    other systems' shapes (not with each other). Its blocks of the world's ``q``, ``v`` and
    ``u`` are the body's vertex positions, velocities and forces (``body.ndof`` each). Each
    world step runs the body's implicit step with the world's ``dt``; contact impulses act
    through that step's Hessian, so elasticity answers them within the step. Pinned
    coordinates stay where they are. A :class:`SoftBody` given to :class:`World` directly
    gets the defaults.
    """

    def __init__(
        self,
        body: "SoftBody",
        friction: float = 0.8,
        radius: float = 0.0,
        integrator: str = "backward_euler",
        tolerance: float = 1e-10,
        max_iterations: int = 50,
        line_search: bool = True,
        linear_solver: str = "direct",
    ) -> None:
        """:param body: the soft body.
        :param friction: Coulomb friction coefficient of the contact vertices (finite, >= 0).
        :param radius: contact radius of the vertices (m, finite, >= 0).
        :param integrator: ``"backward_euler"`` or ``"implicit_midpoint"``.
        :param tolerance: Newton's tolerance, relative to the rest mesh's diagonal (> 0).
        :param max_iterations: Newton's iteration budget per step (>= 1).
        :param line_search: backtracking line search on the incremental potential.
        :raises InputError: invalid values.
        """
    @property
    def body(self) -> "SoftBody":
        """The soft body."""
    @property
    def contact_vertices(self) -> npt.NDArray[np.int64]:
        """The boundary vertices that collide, ascending, int64: element ``k`` of a contact
        side ``(system, k)`` is vertex ``contact_vertices[k]``."""
    @property
    def friction(self) -> float:
        """The Coulomb friction coefficient of the contact vertices."""
    @property
    def radius(self) -> float:
        """The contact radius of the vertices (m)."""
    @property
    def integrator(self) -> str:
        """``"backward_euler"`` or ``"implicit_midpoint"``."""

class WorldStepRecord:
    """One recorded world step (:meth:`World.step_recorded`, or an entry of a
    :class:`WorldTape`): the next state, the contacts, the constraint solve, and everything
    the step's vector-Jacobian product needs. Self-contained."""

    def vjp(self, grad_q_next: ArrayLike, grad_v_next: ArrayLike, params: bool = False) -> Tuple[Vector, ...]:
        """Vector-Jacobian product: given ``∂ℓ/∂q⁺`` (tangent, nv) and ``∂ℓ/∂v⁺`` (nv), returns
        ``(grad_q, grad_v, grad_u)``, the gradients of ℓ with respect to the step's ``q``
        (tangent, nv), ``v`` (nv) and ``u`` (nu), in the contact mode of the recorded solve;
        with ``params=True``, ``(grad_q, grad_v, grad_u, grad_theta)`` (θ as
        :attr:`World.param_names`).

        :raises InputError: wrong lengths or non-finite values.
        """
    @property
    def q_next(self) -> Vector:
        """Configuration after the step, shape (nq,)."""
    @property
    def v_next(self) -> Vector:
        """Velocity after the step, shape (nv,)."""
    @property
    def num_contacts(self) -> int:
        """The number of contacts nc."""
    @property
    def impulses(self) -> Vector:
        """The constraint impulses ``f`` (N·s), shape (3·nc,): per contact the normal, then
        the two friction directions."""
    @property
    def row_states(self) -> List[str]:
        """The solve's classification of each row (``"clamping"``, ``"separating"``,
        ``"at_lower"``, ``"at_upper"``, ``"tied"``): the contact mode the VJP differentiates."""
    @property
    def constraint_jacobian(self) -> Matrix:
        """The constraint Jacobian ``J``, shape (3·nc, nv): the relative velocity of side B
        with respect to side A along each contact's normal, then friction directions."""
    @property
    def contacts(self) -> List[Dict[str, Any]]:
        """The contacts, one dict each: ``side_a``, ``side_b`` (None for static geometry, else
        ``(system, element)``: a body of a :class:`Model`, a particle, a soft body's vertex
        ``contact_vertices[element]``), ``shape_a``,
        ``shape_b`` (``(system, shape)``), ``point`` (3,) and ``normal`` (3,, from A to B)
        in world coordinates, ``distance`` (signed, negative in penetration), ``friction``
        (the pair's μ) and ``kind`` (``"vertex-face"``, ...)."""

class WorldTape:
    """The records of a world rollout (:meth:`World.rollout`), in step order."""

    def __len__(self) -> int:
        """The number of steps T."""
    def __getitem__(self, t: int) -> WorldStepRecord:
        """The record of step ``t`` (negative indices count from the end)."""
    def backward(
        self, grad_q: Optional[ArrayLike] = None, grad_v: Optional[ArrayLike] = None, params: bool = False
    ) -> Tuple[Any, ...]:
        """Reverse-mode sweep: ``grad_q[k]``, ``grad_v[k]`` (shapes (T, nv)) are ``∂ℓ/∂q_{k+1}``
        (tangent) and ``∂ℓ/∂v_{k+1}`` of the state after step k, i.e. of row k of the
        rollout's ``(Q, V)``; None: zero. Returns ``(grad_q0, grad_v0, grad_u)``: the total
        derivatives with respect to the start state (tangent q; nv each) and the controls,
        shape (T, nu); with ``params=True`` also ``grad_theta``, summed over the steps.

        :raises InputError: an empty tape, wrong shapes or non-finite values.
        """
    @staticmethod
    def vjp_batch(
        tapes: Sequence["WorldTape"],
        q0: ArrayLike,
        grad_q: Optional[ArrayLike] = None,
        grad_v: Optional[ArrayLike] = None,
        threads: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Reverse-mode sweeps of B tapes (T steps each, worlds of one size; a tape may appear
        several times) on coordinates, in parallel in Rust: the reverse pass behind
        ``stiction.torch.world_rollout`` and ``stiction.jax.world_rollout``. ``q0`` (B, nq):
        the start coordinates as given (quaternions of any length near 1); ``grad_q``
        (B, T, nq): gradients on the coordinates of the states after each step
        (:meth:`World.tangent_gradient` maps them); ``grad_v`` (B, T, nv); None: zero.

        Returns ``{"q0": (B, nq), "v0": (B, nv), "u": (B, T, nu), "theta": (B, np)}``, the
        ``q0`` gradient on its coordinates (:meth:`World.coordinate_gradient`).

        :raises InputError: an empty list, tapes of other sizes, wrong shapes or non-finite
            values.
        """

class TetMesh:
    """A tetrahedral mesh at rest (immutable): vertex positions, positively oriented linear
    tets (``(X1 − X0) · ((X2 − X0) × (X3 − X0)) > 0``) and a region tag per tet
    (materials are given per region).

    Validated on construction: non-finite positions, indices out of range, a vertex named
    twice by a tet, degenerate or inverted tets, unused and coinciding vertices raise
    :class:`ModelError` naming the tet or vertex.
    """

    def __init__(self, vertices: ArrayLike, tets: ArrayLike, regions: Optional[ArrayLike] = None) -> None:
        """:param vertices: rest positions, shape (n, 3).
        :param tets: vertex indices, shape (m, 4), positively oriented.
        :param regions: a region tag (integer >= 0) per tet, shape (m,); default all 0.
        :raises InputError: bad shapes or non-integer indices.
        :raises ModelError: an invalid mesh (the message names the tet or vertex).
        """
    @staticmethod
    def box(cells: Sequence[int], extent: ArrayLike, origin: Optional[ArrayLike] = None) -> "TetMesh":
        """The axis-aligned box ``[origin, origin + extent]`` (origin default 0) split into
        ``cells = (nx, ny, nz)`` hexahedral cells of six tets each (conforming, all of the
        same volume), in region 0. Vertex ``(i, j, k)`` has index ``i + (nx+1)(j + (ny+1)k)``.

        :raises InputError: a zero cell count or a non-positive extent.
        """
    @staticmethod
    def rod(cells_along: int, cells_across: int, length: float, width: float) -> "TetMesh":
        """A bar of square cross-section along +x: ``x ∈ [0, length]``, ``y, z ∈ [−width/2,
        width/2]``, ``cells_along`` cells along x and ``cells_across`` along y and z.

        :raises InputError: zero cells or a non-positive length or width.
        """
    @staticmethod
    def load(path: PathLike) -> "TetMesh":
        """Loads a mesh file by its extension: Gmsh ``.msh`` 4.1, or a VTK unstructured grid
        (``.vtk`` legacy, ``.vtu`` ASCII XML). Only linear tets make the mesh; region tags come
        from the file's physical groups or ``region`` cell array.

        :raises LoadError: a missing or malformed file, or another extension.
        :raises ModelError: an invalid mesh.
        """
    @staticmethod
    def load_tetgen(node_path: PathLike, ele_path: PathLike) -> "TetMesh":
        """Loads a TetGen mesh from its ``.node`` and ``.ele`` files.

        :raises LoadError: a missing or malformed file.
        :raises ModelError: an invalid mesh.
        """
    @property
    def vertices(self) -> Matrix:
        """The rest positions, shape (n, 3)."""
    @property
    def tets(self) -> npt.NDArray[np.int64]:
        """The tets, shape (m, 4), int64 vertex indices."""
    @property
    def regions(self) -> npt.NDArray[np.int64]:
        """The region tag of every tet, shape (m,), int64."""
    @property
    def volumes(self) -> Vector:
        """The rest volume of every tet (m³), shape (m,)."""
    @property
    def num_vertices(self) -> int:
        """The number of vertices n."""
    @property
    def num_tets(self) -> int:
        """The number of tets m."""
    def __len__(self) -> int:
        """The number of tets m."""
    def surface(self) -> npt.NDArray[np.int64]:
        """The boundary triangles, shape (k, 3), int64, ordered so that the right-hand normal
        points out of the body."""
    def write_vtu(
        self,
        path: PathLike,
        positions: Optional[ArrayLike] = None,
        cell_data: Optional[Mapping[str, ArrayLike]] = None,
        point_data: Optional[Mapping[str, ArrayLike]] = None,
    ) -> None:
        """Writes the mesh as an ASCII XML ``.vtu`` file (ParaView) at ``positions`` (shape
        (n, 3) or a flat state (3n,); default the rest positions), with the region tags,
        ``cell_data`` (name → one value per tet) and ``point_data`` (name → shape (n, 3)).
        Numbers read back exactly with :meth:`load`.

        :raises InputError: wrong shapes, non-finite values, a bad or repeated array name
            (``region`` is taken), or a file that cannot be written.
        """
    def vertices_where(self, predicate: Any) -> List[int]:
        """The indices (ascending) of the rest vertices for which ``predicate(p)`` (``p`` of
        shape (3,)) is true, e.g. ``mesh.vertices_where(lambda p: p[0] <= 1e-9)``."""

class SoftBody:
    """A soft body (immutable): a :class:`TetMesh` with a material per region, lumped vertex
    masses, damping, gravity and pinned degrees of freedom, stepped by backward Euler as an
    energy minimisation (Newton, sparse Cholesky).

    The state is the vertex positions ``x`` and velocities ``v``, flat vectors of 3
    coordinates per vertex (``x[3i + k]``, ``ndof = 3n``); the controls ``u`` are vertex
    forces (N); each pinned degree of freedom follows a target (its position at the end of
    the step, in the order of :attr:`pinned_dofs`). The differentiable parameters θ are named
    by :attr:`param_names`.
    """

    def __init__(
        self,
        mesh: TetMesh,
        material: str = "neo_hookean",
        youngs_modulus: float = 1e5,
        poisson: float = 0.3,
        density: float = 1000.0,
        regions: Optional[Mapping[int, Mapping[str, Union[str, float]]]] = None,
        damping: Optional[ArrayLike] = (0.0, 0.0),
        gravity: Optional[ArrayLike] = None,
        pin_vertices: Optional[Sequence[int]] = None,
        pin_dofs: Optional[Sequence[Tuple[int, int]]] = None,
    ) -> None:
        """:param material: ``"linear"``, ``"corotated"``, ``"stvk"`` or ``"neo_hookean"``
            (stable Neo-Hookean), for every region.
        :param youngs_modulus: E (Pa); ``poisson``: ν in (−1, 0.5); ``density``: ρ (kg/m³).
        :param regions: per-region overrides ``{tag: {"material", "youngs_modulus",
            "poisson", "density"}}``; missing keys keep the body-wide values.
        :param damping: ``(α, β)``: mass-proportional (1/s) and stiffness-proportional (s).
        :param gravity: m/s², default ``(0, 0, −9.81)``.
        :param pin_vertices: vertices whose three coordinates are pinned.
        :param pin_dofs: single ``(vertex, axis)`` pins.
        :raises InputError: an unknown material name, a region the mesh lacks, negative
            damping, non-finite gravity, a pin out of range.
        :raises ModelError: an invalid material (E ≤ 0, ν outside (−1, 0.5), ρ ≤ 0).
        """
    @property
    def mesh(self) -> TetMesh:
        """The rest mesh."""
    @property
    def ndof(self) -> int:
        """The number of degrees of freedom, 3 per vertex."""
    @property
    def num_vertices(self) -> int:
        """The number of vertices."""
    @property
    def masses(self) -> Vector:
        """The lumped vertex masses (kg), shape (n,)."""
    @property
    def total_mass(self) -> float:
        """The total mass (kg)."""
    @property
    def pinned_dofs(self) -> List[int]:
        """The pinned degrees of freedom ``3·vertex + axis``, ascending (the targets' order)."""
    @property
    def param_names(self) -> List[str]:
        """The names of θ: per region ``youngs_modulus:TAG``, ``poisson:TAG``,
        ``density:TAG``; then ``damping_mass``, ``damping_stiffness``."""
    @property
    def param_values(self) -> Vector:
        """θ, in the order of :attr:`param_names`."""
    @property
    def rest_positions(self) -> Vector:
        """The rest positions as a state vector, shape (ndof,)."""
    @property
    def gravity(self) -> Vector:
        """The gravity (m/s²), shape (3,)."""
    @property
    def damping(self) -> Tuple[float, float]:
        """``(α, β)``: the mass- and stiffness-proportional damping coefficients."""
    def with_params(self, values: ArrayLike) -> "SoftBody":
        """The same body with θ ``values`` (in the order of :attr:`param_names`).

        :raises InputError: a wrong length or negative damping.
        :raises ModelError: an invalid material value.
        """
    def elastic_forces(self, x: ArrayLike) -> Vector:
        """The elastic forces ``−∂E/∂x`` at positions ``x`` (N), shape (ndof,)."""
    def elastic_energy(self, x: ArrayLike) -> float:
        """The elastic energy ``Σ_e V_e Ψ(F_e)`` at positions ``x`` (J)."""
    @overload
    def step(
        self,
        x: ArrayLike,
        v: ArrayLike,
        u: Optional[ArrayLike] = None,
        targets: Optional[ArrayLike] = None,
        dt: float = 1e-3,
        tolerance: float = 1e-10,
        max_iterations: int = 50,
        line_search: bool = True,
        record: Literal[False] = False,
        integrator: str = "backward_euler",
        linear_solver: str = "direct",
    ) -> Tuple[Vector, Vector]: ...
    @overload
    def step(
        self,
        x: ArrayLike,
        v: ArrayLike,
        u: Optional[ArrayLike] = None,
        targets: Optional[ArrayLike] = None,
        dt: float = 1e-3,
        tolerance: float = 1e-10,
        max_iterations: int = 50,
        line_search: bool = True,
        *,
        record: Literal[True],
        integrator: str = "backward_euler",
        linear_solver: str = "direct",
    ) -> "SoftStepRecord": ...
    def step(
        self,
        x: ArrayLike,
        v: ArrayLike,
        u: Optional[ArrayLike] = None,
        targets: Optional[ArrayLike] = None,
        dt: float = 1e-3,
        tolerance: float = 1e-10,
        max_iterations: int = 50,
        line_search: bool = True,
        record: bool = False,
        integrator: str = "backward_euler",
        linear_solver: str = "direct",
    ) -> Union[Tuple[Vector, Vector], "SoftStepRecord"]:
        """One implicit step (``integrator``: ``"backward_euler"`` or ``"implicit_midpoint"``; ``linear_solver``: ``"direct"``, a factorization per Newton iteration, or ``"kept_factor"``/``"kept_factor_f64"``, one kept factor preconditioning conjugate gradients, or ``"pcr_gpu"``, conjugate residuals on the GPU with a direct fallback counted in the report's ``gpu_fallbacks``) from ``(x, v)`` under vertex forces ``u`` (None: zero), the
        pins moving to ``targets`` (None: where ``x`` has them). Newton stops when its step is
        at most ``tolerance`` times the rest mesh's diagonal. Returns ``(x_next, v_next)``, or
        a :class:`SoftStepRecord` with ``record=True``.

        :raises InputError: wrong lengths, NaN or invalid options.
        :raises NumericalError: no convergence within ``max_iterations``.
        """
    def static_equilibrium(
        self,
        x: Optional[ArrayLike] = None,
        u: Optional[ArrayLike] = None,
        targets: Optional[ArrayLike] = None,
        tolerance: float = 1e-10,
        max_iterations: int = 50,
        linear_solver: str = "direct",
    ) -> Tuple[Vector, Dict[str, Any]]:
        """The static equilibrium under gravity and forces ``u``, pins at ``targets`` (None:
        where ``x`` has them), by Newton from ``x`` (None: the rest positions). Returns
        ``(x, report)`` (the report as :attr:`SoftStepRecord.report`).

        :raises InputError: wrong lengths or NaN.
        :raises NumericalError: no convergence, or a body not held by enough pins.
        """
    def rollout(
        self,
        x: ArrayLike,
        v: ArrayLike,
        controls: ArrayLike,
        targets: Optional[ArrayLike] = None,
        dt: float = 1e-3,
        tolerance: float = 1e-10,
        max_iterations: int = 50,
        line_search: bool = True,
        integrator: str = "backward_euler",
        linear_solver: str = "direct",
    ) -> "SoftRollout":
        """``N`` recorded steps under the vertex forces ``controls`` (shape (N, ndof)) with
        the pin ``targets`` of each step (shape (N, len(pinned_dofs)); None: held where ``x``
        has them). A failing step's error names it."""
    def rollout_batch(
        self,
        x: ArrayLike,
        v: ArrayLike,
        controls: ArrayLike,
        targets: Optional[ArrayLike] = None,
        thetas: Optional[ArrayLike] = None,
        dt: float = 1e-3,
        tolerance: float = 1e-10,
        max_iterations: int = 50,
        line_search: bool = True,
        integrator: str = "backward_euler",
        linear_solver: str = "direct",
        threads: Optional[int] = None,
    ) -> List["SoftRollout"]:
        """``B`` independent recorded rollouts, in parallel in Rust (rayon; the GIL is
        released): start states ``x``, ``v`` (B, ndof), vertex forces ``controls``
        (B, T, ndof), pin ``targets`` (B, T, len(pinned_dofs); None: each rollout's pins held
        where its ``x`` has them), per-rollout parameter values ``thetas``
        (B, len(param_names); None: this body's). Options as :meth:`step`.

        Rollout b equals :meth:`rollout` of ``with_params(thetas[b])`` (or of this body) bit
        for bit, for any ``threads`` (``None``: all cores). Returns B :class:`SoftRollout`.

        :raises InputError: wrong shapes, NaN, a failing rollout (the message names it and
            the step), ``threads`` not an integer >= 1.
        :raises ModelError: a θ outside the materials' domain.
        """
    def gradcheck(
        self,
        x: ArrayLike,
        v: ArrayLike,
        u: Optional[ArrayLike] = None,
        targets: Optional[ArrayLike] = None,
        dt: float = 1e-3,
        method: str = "ridders",
        rel_tol: float = 1e-6,
        step: float = 1e-3,
        abs_floor: float = 1e-5,
        integrator: str = "backward_euler",
    ) -> "GradReport":
        """Checks every Jacobian block of one step (``∂(x⁺, v⁺)/∂(x, v, u, targets, θ)``) against
        finite differences (``method``: ``"ridders"``, ``"central"`` or ``"both"``); returns a
        :class:`GradReport`.

        :raises InputError: wrong lengths, NaN or invalid settings.
        """
    def identify(
        self,
        initial_x: ArrayLike,
        initial_v: ArrayLike,
        controls: ArrayLike,
        observed: Mapping[int, ArrayLike],
        free: Sequence[str],
        targets: Optional[ArrayLike] = None,
        dt: float = 1e-3,
        max_iterations: int = 50,
        tolerance: float = 1e-12,
        integrator: str = "backward_euler",
    ) -> Dict[str, Any]:
        """Fits the parameters named ``free`` to positions ``observed`` (``{k: x_k}`` after
        step k, 1 ≤ k ≤ N) of the experiment ``(initial_x, initial_v, controls, targets)``
        by Levenberg–Marquardt on exact residual Jacobians, from this body's values. Returns
        ``{"names", "values", "body", "initial_cost", "cost", "iterations"}``.

        :raises InputError: unknown names or inconsistent data.
        :raises NumericalError: a step that fails.
        """

class SoftStepRecord:
    """One recorded soft-body step (:meth:`SoftBody.step` with ``record=True``, or an entry
    of a :class:`SoftRollout`): inputs, result, Newton's report, VJP and Jacobians.
    Self-contained."""

    @property
    def x_next(self) -> Vector:
        """The positions after the step, shape (ndof,)."""
    @property
    def v_next(self) -> Vector:
        """The velocities after the step, shape (ndof,)."""
    @property
    def x(self) -> Vector:
        """The positions before the step, shape (ndof,)."""
    @property
    def v(self) -> Vector:
        """The velocities before the step, shape (ndof,)."""
    @property
    def u(self) -> Vector:
        """The vertex forces of the step, shape (ndof,)."""
    @property
    def targets(self) -> Vector:
        """The pin targets of the step, shape (len(pinned_dofs),)."""
    @property
    def dt(self) -> float:
        """The time step (s)."""
    @property
    def report(self) -> Dict[str, Any]:
        """Newton's report: ``iterations``, ``factorizations``, ``linear_iterations`` (conjugate-gradient
        iterations per Newton iteration with a kept factor; GPU conjugate-residual iterations with
        ``"pcr_gpu"``), ``gpu_fallbacks`` (with ``"pcr_gpu"``: iterations solved directly for want of a
        GPU), ``final_check`` (the step ended on the kept
        factor's convergence check), ``gradient_norms``, ``step_norms``,
        ``step_lengths``, ``projected_iterations``, ``inverted_elements`` and ``timings``
        (seconds in ``assembly``, ``factorization``, ``solve``, ``line_search``)."""
    def vjp(self, grad_x_next: ArrayLike, grad_v_next: ArrayLike) -> Dict[str, Vector]:
        """Given ``∂ℓ/∂x⁺`` and ``∂ℓ/∂v⁺`` (ndof each), returns ``{"x", "v", "u", "targets",
        "theta"}``, the gradients of ℓ with respect to the step's inputs.

        :raises InputError: wrong lengths or NaN.
        :raises NumericalError: a singular Hessian.
        """
    def jacobians(self) -> Dict[str, Matrix]:
        """The Jacobians of ``(x⁺, v⁺)``: ``"x_x"``, ``"x_v"``, ``"x_u"`` (ndof × ndof),
        ``"x_targets"`` (ndof × len(pinned_dofs)), ``"x_theta"`` (ndof × len(param_names)),
        and ``"v_x"``, ... likewise. For small and medium meshes (prefer :meth:`vjp`).

        :raises NumericalError: a singular Hessian.
        """

class SoftRollout:
    """A recorded soft-body rollout (:meth:`SoftBody.rollout`)."""

    def __len__(self) -> int:
        """The number of steps N."""
    def __getitem__(self, k: int) -> SoftStepRecord:
        """The record of step ``k`` (negative indices count from the end)."""
    @property
    def states(self) -> Tuple[Matrix, Matrix]:
        """``(xs, vs)``, shapes (N, ndof): row k is the state after step k."""
    @property
    def reports(self) -> List[Dict[str, Any]]:
        """Newton's report of every step."""
    def backward(self, grad_x: Optional[ArrayLike] = None, grad_v: Optional[ArrayLike] = None) -> Dict[str, Any]:
        """Reverse-mode sweep: ``grad_x[k]``, ``grad_v[k]`` (shapes (N, ndof); None: zero) are
        the partial derivatives of ℓ with respect to row k of :attr:`states`. Returns the total
        derivatives ``{"x0", "v0" (ndof,), "u" (N, ndof), "targets" (N, len(pinned_dofs)),
        "theta"}``.

        :raises InputError: an empty rollout, wrong shapes or NaN.
        """
    @staticmethod
    def backward_batch(
        rollouts: Sequence["SoftRollout"],
        grad_x: Optional[ArrayLike] = None,
        grad_v: Optional[ArrayLike] = None,
        threads: Optional[int] = None,
    ) -> Dict[str, Any]:
        """:meth:`backward` of B rollouts (of one body's size and T steps each; the same
        rollout may appear several times) in parallel in Rust: ``grad_x``, ``grad_v``
        (B, T, ndof; None: zero). Returns ``{"x0", "v0" (B, ndof), "u" (B, T, ndof),
        "targets" (B, T, len(pinned_dofs)), "theta" (B, len(param_names))}``, row b equal to
        ``rollouts[b].backward(grad_x[b], grad_v[b])``.

        :raises InputError: an empty list, rollouts of different sizes, wrong shapes or NaN.
        """

class GradReport:
    """The result of :func:`gradcheck`; ``str(report)`` is a table of the blocks."""

    @property
    def passed(self) -> bool:
        """True when every block passes."""
    @property
    def blocks(self) -> List[Dict[str, Any]]:
        """One dict per block (and per method with ``method="both"``): ``name``
        (``"dq+/dq"``, ..., ``"dv+/dtheta"``), ``method``, ``shape``, ``max_abs_error``,
        ``max_rel_error``, ``worst_row``, ``worst_col``, ``worst`` (label), ``analytic``
        and ``fd`` (the values at the worst entry), ``fd_error_estimate`` (Ridders) or
        None, ``scale`` (largest ``|fd|`` of the block), ``passed``."""
    @property
    def rel_tol(self) -> float:
        """The relative tolerance the blocks were judged with."""
    @property
    def title(self) -> str:
        """What was checked (model, dimensions, dt)."""
    @property
    def max_rel_error(self) -> float:
        """The largest relative error over all blocks."""
    def __bool__(self) -> bool: ...

def gradcheck(
    model: Model,
    q: ArrayLike,
    v: ArrayLike,
    tau: ArrayLike,
    params: Union[ParamSpec, Sequence[str], str, None] = None,
    dt: float = 1e-3,
    velocity_products: str = "midpoint",
    method: str = "ridders",
    rel_tol: float = 1e-6,
    step: float = 1e-3,
    abs_floor: float = 1e-5,
    wrenches: Optional[ArrayLike] = None,
    gravity: Optional[ArrayLike] = None,
    contact: ContactArg = None,
) -> GradReport:
    """Checks the analytic Jacobians of one simulator step against finite differences.

    Steps a simulator of ``model`` (``dt``, ``velocity_products``, ``gravity``) from
    ``(q, v)`` under ``tau`` with θ = ``params``, and compares each block of
    :meth:`StepRecord.jacobians` with finite differences of the step (q perturbed on
    the manifold, θ through :meth:`ParamSpec.apply`).

    :param contact: the constraint stage's options, as for :class:`Simulator`. Through
        contact, finite differences are only meaningful inside one contact mode: keep
        ``step`` below the distance to the nearest mode change, and prefer
        ``contact={"warm_start": False}`` and ``abs_floor=1e-4`` (the LCP's rounding noise
        divided by the step).
    :param method: ``"ridders"`` (default), ``"central"`` or ``"both"``.
    :param step: FD step (central) or initial step (Ridders); scaled per input.
    :param rel_tol: an entry passes when ``|a − f| / max(|f|, abs_floor·max(s, 1)) <= rel_tol``,
        with ``s`` the block's largest ``|f|``.
    :raises InputError: wrong shapes, an unknown option or parameter name, invalid settings.
    """

def load_mjcf(path: PathLike, strict: bool = False, merge_fixed_joints: bool = True) -> Dict[str, Any]:
    """Loads an MJCF file with what the :class:`Model` does not hold.

    Returns a dict: ``model`` (:class:`Model`), ``actuators`` (one dict per joint motor:
    ``name``, ``joint``, ``gear``, ``ctrl_range`` and ``force_range`` as ``(lo, hi)`` or
    None), ``control_matrix`` (nv × number of actuators: joint forces ``tau = B @ u``)
    and ``timestep`` (the file's ``<option timestep>``, or None).

    :raises LoadError: as :meth:`Model.from_mjcf`.
    """

def load_scene(path: PathLike) -> Dict[str, Any]:
    """Loads a scene file: the JSON format of ``stiction gradcheck`` and
    ``examples/scenes`` (docs/gradients.md, "Scene files"), rigid or soft-body.

    Every scene gives ``kind`` (``"rigid"`` or ``"soft"``), ``description`` (str or None),
    ``tolerance`` (float or None) and ``dt``.

    A rigid scene (one model source: ``"sample"``, ``"urdf"`` or ``"mjcf"`` relative to the
    file, or ``"model"``; simulation options, an optional state and control, parameter
    names) adds ``model`` (:class:`Model`), ``simulator`` (a :class:`Simulator` with the
    scene's ``dt``, gravity, velocity products and ``params``), ``params``
    (:class:`ParamSpec`), ``q``, ``v``, ``tau`` (arrays, or None where the scene gives no
    state or control).

    A soft-body scene (a top-level ``"soft"``: mesh, materials, damping, gravity, pins;
    step options, an optional state and control) adds ``body`` (:class:`SoftBody`),
    ``options`` (a dict ``dt``, ``tolerance``, ``max_iterations``, ``line_search``,
    ``integrator``: the keyword arguments of :meth:`SoftBody.step`), ``x``, ``v`` (arrays,
    or None without a state), ``u`` and ``targets`` (arrays, or None where the scene leaves
    them random).

    :raises InputError: a missing file, malformed JSON, unknown fields, bad values, wrong
        lengths or unknown parameter names (the message names the scene file and the field).
    :raises LoadError: the scene's URDF, MJCF or mesh file (or one of its meshes) cannot be
        loaded (the message names that file).
    """

def gradcheck_scene(
    path: PathLike,
    states: Optional[int] = None,
    seed: int = 0,
    method: str = "ridders",
    rel_tol: Optional[float] = None,
    step: float = 1e-3,
    abs_floor: float = 1e-5,
) -> List[GradReport]:
    """Runs the gradient checks of a scene file, rigid or soft-body, as
    ``stiction gradcheck SCENE`` does; returns one :class:`GradReport` per case.

    :param states: the number of cases (default 1 when the scene has a state, else 5); the
        first is the scene's state when it has one, the others random, reproducible from
        ``seed``.
    :param rel_tol: default the scene's ``tolerance``, else 1e-6.
    :raises InputError: as :func:`load_scene`, or invalid settings.
    :raises LoadError: as :func:`load_scene`.
    :raises NumericalError: a check whose step fails.
    """

def pendulum_chain(n: int, length: float = 1.0, mass: float = 1.0) -> Model:
    """A planar chain of ``n`` rods hanging along -z, hinged about y."""

def spatial_chain(n: int) -> Model:
    """A chain of ``n`` links whose hinge axes cycle through x, y, z."""

def arm7() -> Model:
    """A 7-DoF arm."""

def cartpole() -> Model:
    """A cartpole: a 1 kg cart on a prismatic x joint and a 0.2 kg, 0.5 m pole on a revolute
    y joint, hanging at q = 0 (upright at θ = π); no limits, no collision shapes."""

def binary_tree(depth: int) -> Model:
    """A binary tree of revolute joints ``depth`` levels deep (2**depth - 1 bodies).

    Raises ``InputError`` unless ``1 <= depth <= 16``."""

def humanoid() -> Model:
    """A floating-base humanoid-like tree with 50 degrees of freedom, bare (no limits,
    damping, armature or collision shapes)."""

def humanoid_on_ground() -> Model:
    """The humanoid equipped as a robot (position and effort limits, damping, armature,
    collision shapes), standing with its soles on a ground plane 0.95 m below the pelvis
    in the neutral configuration."""

def all_joint_types() -> Model:
    """A model with one joint of every type."""

def random_tree(n: int, seed: int = 0, floating: bool = False) -> Model:
    """A random tree of ``n`` bodies reproducible from ``seed``; with ``floating`` the root is free."""

def bodies_on_plane(n: int, shape: str = "box") -> Model:
    """``n`` free bodies (``"box"``, ``"sphere"`` or ``"capsule"``) on a 0.35 m grid,
    resting on the world plane z = 0 and penetrating it by 1 mm at the neutral
    configuration."""

def arch(blocks: int = 20) -> Model:
    """The NCP paper's self-supporting parabolic arch (half span 1 m, rise 1.5 m) of ``blocks``
    convex voussoirs, 18–71 kg for 20 blocks, μ = 0.6, standing face on face on the world plane
    at the neutral configuration.

    Raises ``InputError`` for fewer than 2 blocks."""

def table_pile(n: int = 54, seed: int = 1) -> Model:
    """The NCP paper's table pile: ``n`` tables of 4.7 kg (a 0.5 m top on four 0.3 m legs,
    μ = 0.7) over a 3 × 3 grid, turned and tilted at random (``seed``), stacked clear of one
    another at the neutral configuration and about to fall into a pile.

    Raises ``InputError`` for ``n < 1``."""

class PointCost:
    """A world-space cost ``½ (p − p*)ᵀ W (p − p*)`` on a point ``p(q)`` fixed on a body, for the
    ``costs`` of :func:`stiction.trajopt.ilqr` and :func:`stiction.trajopt.shooting`."""

    def __init__(
        self,
        model: Model,
        body: Union[int, str],
        target: ArrayLike,
        weight: float = 1.0,
        point: Optional[ArrayLike] = None,
        running_weight: float = 0.0,
        axis_weights: Optional[ArrayLike] = None,
    ) -> None:
        """:param body: the body, by name or index (looked up by name in the simulator's model
            at optimisation time).
        :param target: the world target (3,).
        :param weight: the weight on the final state (``W = weight · diag(axis_weights)``).
        :param point: the point in the body's frame (default its origin).
        :param running_weight: the weight on every earlier state (default 0).
        :param axis_weights: per world axis (default ``(1, 1, 1)``).
        :raises InputError: an unknown body, non-finite vectors, negative or non-finite weights.
        """
    def position(self, q: ArrayLike) -> Vector:
        """The world position of the point at configuration ``q``, shape (3,)."""
    @property
    def body(self) -> str:
        """The body's name."""
    @property
    def point(self) -> Vector:
        """The point in the body's frame, shape (3,)."""
    @property
    def target(self) -> Vector:
        """The world target, shape (3,)."""
    @property
    def weight(self) -> float:
        """The terminal weight."""
    @property
    def running_weight(self) -> float:
        """The running weight."""
    @property
    def axis_weights(self) -> Vector:
        """The world-axis weights, shape (3,)."""

class ObstacleCost:
    """A smooth penalty ``w Σ_k max(0, radius + margin − |p_k − center|)²`` keeping body points out of
    a sphere, for the ``costs`` of :func:`stiction.trajopt.ilqr` and :func:`stiction.trajopt.shooting`."""

    def __init__(
        self,
        model: Model,
        points: Sequence[Union[int, str, Tuple[Union[int, str], ArrayLike]]],
        center: ArrayLike,
        radius: float,
        margin: float = 0.0,
        running_weight: float = 1.0,
        terminal_weight: Optional[float] = None,
    ) -> None:
        """:param points: each a body (name or index; its origin) or a ``(body, point)`` pair.
        :param terminal_weight: the weight on the final state (default ``running_weight``).
        :raises InputError: no points, an unknown body, non-finite or negative values.
        """
    def clearance(self, q: ArrayLike) -> float:
        """The smallest ``|p_k − center| − radius`` at configuration ``q`` (negative inside)."""
    @property
    def bodies(self) -> List[str]:
        """The bodies of the points."""
    @property
    def points(self) -> Matrix:
        """The points in their bodies' frames, shape (K, 3)."""
    @property
    def center(self) -> Vector:
        """The sphere's centre, shape (3,)."""
    @property
    def radius(self) -> float:
        """The sphere's radius."""
    @property
    def margin(self) -> float:
        """The safety margin."""
    @property
    def running_weight(self) -> float:
        """The weight on every running step."""
    @property
    def terminal_weight(self) -> float:
        """The weight on the final state."""

WorldCosts = Union[None, PointCost, ObstacleCost, Sequence[Union[PointCost, ObstacleCost]]]

def _ilqr(
    sim: Simulator, q0: ArrayLike, v0: ArrayLike, controls: ArrayLike, target_q: Optional[ArrayLike] = None,
    target_v: Optional[ArrayLike] = None, state_weight: Optional[ArrayLike] = None,
    control_weight: Optional[ArrayLike] = None, terminal_weight: Optional[ArrayLike] = None,
    lower: Optional[ArrayLike] = None, upper: Optional[ArrayLike] = None, jacobians: str = "analytic",
    max_iterations: int = 200, cost_tolerance: float = 1e-7, callback: Optional[Any] = None,
    costs: WorldCosts = None,
) -> Dict[str, Any]:
    """iLQR; use :func:`stiction.trajopt.ilqr`."""

def _shooting(
    sim: Simulator, q0: ArrayLike, v0: ArrayLike, controls: ArrayLike, target_q: Optional[ArrayLike] = None,
    target_v: Optional[ArrayLike] = None, state_weight: Optional[ArrayLike] = None,
    control_weight: Optional[ArrayLike] = None, terminal_weight: Optional[ArrayLike] = None,
    lower: Optional[ArrayLike] = None, upper: Optional[ArrayLike] = None, max_iterations: int = 500,
    callback: Optional[Any] = None, costs: WorldCosts = None,
) -> Dict[str, Any]:
    """Single shooting; use :func:`stiction.trajopt.shooting`."""

def _sysid_fit(
    sim: Simulator, params: Sequence[str], trajectories: List[Dict[str, Any]], theta0: Optional[ArrayLike] = None,
    lower: Optional[ArrayLike] = None, upper: Optional[ArrayLike] = None, jacobians: str = "analytic",
    max_iterations: int = 100, callback: Optional[Any] = None, evaluate: Optional[Any] = None,
) -> Dict[str, Any]:
    """System identification; use :func:`stiction.sysid.fit` (``evaluate``: residuals computed
    elsewhere, :func:`stiction.distributed.sysid_fit`)."""

def _sysid_evaluate(
    sim: Simulator, params: Sequence[str], trajectories: List[Dict[str, Any]], theta: ArrayLike, jacobian: bool,
    lower: Optional[ArrayLike] = None, upper: Optional[ArrayLike] = None, jacobians: str = "analytic",
) -> Tuple[np.ndarray, Optional[np.ndarray], int]:
    """Residuals (and Jacobian) of a slice of a fit's trajectories; used by
    :func:`stiction.distributed.sysid_fit`."""

def _gpu_available() -> Tuple[bool, Union[Dict[str, Any], str]]:
    """``(True, info)`` (``name``, ``compute_capability``, ``memory_bytes``,
    ``nvrtc_version``) or ``(False, reason)``; use :mod:`stiction.gpu`."""
