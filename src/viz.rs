//! Trajectory files of the browser viewer (`python -m stiction.viz FILE.json -o out.html`,
//! docs/viz.md): the `stiction-trajectory` format, version 1, in its *scene* form, written
//! from a [`World`] and a trajectory of its configurations.
//!
//! The scene holds every system's collision shapes — one track (a world pose per kept
//! frame) per moving element (a body, a particle) that carries shapes, fixed shapes (the
//! ground) at their world pose — and, for a system with a drawn surface (a soft body), its
//! surface triangles and vertex positions per kept frame instead of its contact shapes.
//! Rows are subsampled to at most `fps` frames per second of simulated time (the last row
//! always kept), numbers are written as `f32` to keep the file small.

use crate::error::{Error, Result};
use crate::math::SE3;
use crate::world::World;
use nalgebra::{Rotation3, UnitQuaternion};
use serde_json::{json, Value};

/// The format name written into every file.
pub const FORMAT: &str = "stiction-trajectory";
/// The format version written.
pub const VERSION: u32 = 1;

/// Colours (RGB in \[0, 1\]) given to systems and elements in turn (the Python viewer's).
const PALETTE: [[f64; 3]; 8] = [
    [0.122, 0.467, 0.706],
    [1.000, 0.498, 0.055],
    [0.173, 0.627, 0.173],
    [0.580, 0.404, 0.741],
    [0.549, 0.337, 0.294],
    [0.890, 0.467, 0.761],
    [0.737, 0.741, 0.133],
    [0.090, 0.745, 0.812],
];
/// The colour of fixed shapes.
const GROUND: [f64; 3] = [0.62, 0.64, 0.66];

/// A fixed sphere drawn in the scene: a goal, a target, an obstacle.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// Its name in the viewer's scene tree.
    pub name: String,
    /// Its centre (m, world frame).
    pub position: [f64; 3],
    /// Its radius (m); 0 lets the viewer choose (2 % of the scene's size).
    pub radius: f64,
    /// Its colour (RGB in \[0, 1\]).
    pub color: [f64; 3],
    /// Its opacity in (0, 1].
    pub opacity: f64,
}

impl Marker {
    /// A red marker of the viewer's default size at `position`.
    pub fn new(name: impl Into<String>, position: [f64; 3]) -> Self {
        Marker { name: name.into(), position, radius: 0.0, color: [0.839, 0.153, 0.157], opacity: 1.0 }
    }
}

/// What [`world_scene`] writes besides the world and its trajectory.
#[derive(Clone, Debug, PartialEq)]
pub struct SceneOptions {
    /// The page title.
    pub title: String,
    /// Frames kept per second of simulated time (rows are subsampled; the last one is kept).
    pub fps: f64,
    /// Draw each track's axes (the viewer's body-frame overlay).
    pub frames: bool,
    /// Fixed markers.
    pub markers: Vec<Marker>,
    /// Contact overlay: empty for none, else one list per trajectory row of
    /// `[px, py, pz, nx, ny, nz]` (point and unit normal, world frame).
    pub contacts: Vec<Vec<[f64; 6]>>,
}

impl Default for SceneOptions {
    fn default() -> Self {
        SceneOptions { title: "stiction".into(), fps: 60.0, frames: false, markers: Vec::new(), contacts: Vec::new() }
    }
}

/// `[x, y, z, qw, qx, qy, qz]` of a pose.
fn pose7(x: &SE3) -> [f64; 7] {
    let q = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(x.rot));
    [x.trans.x, x.trans.y, x.trans.z, q.w, q.i, q.j, q.k]
}

fn finite(what: &'static str, values: &[f64]) -> Result<()> {
    match values.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(Error::NonFinite { what, index, value: values[index] }),
        None => Ok(()),
    }
}

/// The rows of a trajectory of `n` rows kept at `fps` frames per second of time steps `dt`.
fn kept_rows(n: usize, dt: f64, fps: f64) -> Vec<usize> {
    let stride = ((1.0 / (fps * dt) + 1e-9).floor() as usize).max(1);
    let mut rows: Vec<usize> = (0..n).step_by(stride).collect();
    if rows.last() != Some(&(n - 1)) {
        rows.push(n - 1);
    }
    rows
}

/// The scene of `world` along the trajectory `qs` (row `k`: the configuration at time
/// `k·dt`) as a `stiction-trajectory` JSON value (docs/viz.md, the scene form).
///
/// Errors: no rows, a row whose length is not `world.nq()`, a non-finite entry, a `dt` or
/// `fps` that is not finite and positive, a marker that is not finite, contacts that are
/// not one list per row, or a configuration whose element poses cannot be computed.
pub fn world_scene<Q: AsRef<[f64]>>(world: &World, qs: &[Q], dt: f64, options: &SceneOptions) -> Result<Value> {
    if qs.is_empty() {
        return Err(Error::InvalidInput("a trajectory needs at least one configuration".into()));
    }
    if !(dt.is_finite() && dt > 0.0) {
        return Err(Error::InvalidInput(format!("dt must be finite and positive, got {dt}")));
    }
    if !(options.fps.is_finite() && options.fps > 0.0) {
        return Err(Error::InvalidInput(format!("fps must be finite and positive, got {}", options.fps)));
    }
    if !options.contacts.is_empty() && options.contacts.len() != qs.len() {
        return Err(Error::InvalidInput(format!(
            "contacts must have one list per configuration ({}), got {}",
            qs.len(),
            options.contacts.len()
        )));
    }
    let nq = world.nq();
    for q in qs {
        let q = q.as_ref();
        if q.len() != nq {
            return Err(Error::Dimension { what: "q", expected: nq, got: q.len() });
        }
        finite("q", q)?;
    }
    for m in &options.markers {
        finite("marker position", &m.position)?;
        finite("marker radius", &[m.radius])?;
    }
    for c in &options.contacts {
        finite("contacts", c.as_flattened())?;
    }
    let rows = kept_rows(qs.len(), dt, options.fps);
    let f32s = |xs: &[f64]| xs.iter().map(|&x| json!(x as f32)).collect::<Vec<Value>>();

    // Tracks: one per (system, element) carrying shapes; a system with a surface is drawn by it.
    let mut tracks: Vec<(usize, usize)> = Vec::new();
    let mut shapes = Vec::new();
    let mut surfaces = Vec::new();
    for (i, sys) in world.systems().iter().enumerate() {
        let (qr, _, _) = world.blocks(i).ok_or_else(|| Error::InvalidInput(format!("system {i} has no block")))?;
        let surface = sys.surface_triangles();
        if !surface.is_empty() {
            let n = qr.len() / 3;
            let mut positions = Vec::with_capacity(rows.len() * qr.len());
            for &r in &rows {
                positions.extend(f32s(&qs[r].as_ref()[qr.clone()]));
            }
            surfaces.push(json!({
                "name": format!("system{i}/surface"), "triangles": surface, "num_vertices": n,
                "positions": positions.chunks(3 * n.max(1)).map(|f| f.chunks(3).map(|p| p.to_vec()).collect::<Vec<_>>()).collect::<Vec<_>>(),
                "color": PALETTE[(i + 4) % PALETTE.len()], "opacity": 1.0,
            }));
            continue;
        }
        for (k, s) in sys.shapes().iter().enumerate() {
            let element = sys.shape_element(k);
            let (track, color) = match element {
                Some(e) => {
                    let t = tracks.iter().position(|&x| x == (i, e)).unwrap_or_else(|| {
                        tracks.push((i, e));
                        tracks.len() - 1
                    });
                    (t as i64, PALETTE[(i + e) % PALETTE.len()])
                }
                None => (-1, GROUND),
            };
            let (vertices, triangles) = s.core_mesh();
            shapes.push(json!({
                "name": format!("system{i}/{}{k}", s.kind.name().replace(' ', "_")),
                "kind": s.kind.name().replace(' ', "_"), "radius": s.radius,
                "vertices": vertices.iter().map(|v| [v.x, v.y, v.z]).collect::<Vec<_>>(), "triangles": triangles,
                "color": color, "opacity": 1.0, "track": track, "local": pose7(&s.local),
            }));
        }
    }
    let mut poses = Vec::with_capacity(rows.len());
    for &r in &rows {
        let q = qs[r].as_ref();
        let mut frame = Vec::with_capacity(tracks.len());
        for &(i, e) in &tracks {
            let (qr, _, _) = world.blocks(i).ok_or_else(|| Error::InvalidInput(format!("system {i} has no block")))?;
            frame.push(f32s(&pose7(&world.systems()[i].element_pose(&q[qr], e)?)));
        }
        poses.push(frame);
    }
    let markers: Vec<Value> = options
        .markers
        .iter()
        .map(|m| {
            let mut v = json!({"name": m.name, "position": m.position, "color": m.color, "opacity": m.opacity});
            if m.radius > 0.0 {
                v["radius"] = json!(m.radius);
            }
            v
        })
        .collect();
    let mut out = json!({
        "format": FORMAT, "version": VERSION, "title": options.title,
        "times": rows.iter().map(|&r| r as f64 * dt).collect::<Vec<_>>(),
        "num_tracks": tracks.len(), "poses": poses, "shapes": shapes, "surfaces": surfaces,
        "markers": markers, "contacts": Value::Null,
    });
    if options.frames {
        out["frames"] = json!({"tracks": (0..tracks.len()).collect::<Vec<_>>()});
    }
    if !options.contacts.is_empty() {
        let counts: Vec<usize> = rows.iter().map(|&r| options.contacts[r].len()).collect();
        let data: Vec<Vec<Value>> = rows.iter().flat_map(|&r| options.contacts[r].iter().map(|c| f32s(c))).collect();
        out["contacts"] = json!({"counts": counts, "data": data});
    }
    Ok(out)
}

/// [`world_scene`] as JSON text.
pub fn world_scene_json<Q: AsRef<[f64]>>(world: &World, qs: &[Q], dt: f64, options: &SceneOptions) -> Result<String> {
    let value = world_scene(world, qs, dt, options)?;
    serde_json::to_string(&value).map_err(|e| Error::InvalidInput(format!("the scene cannot be written as JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::Material;
    use crate::math::Vec3;
    use crate::world::{Particles, StaticGeometry, WorldOptions};
    use std::sync::Arc;

    fn world() -> World {
        let particles = Particles::new(&[1.0, 2.0], &[0.05, 0.05], Material::default(), Vec3::new(0.0, 0.0, -9.81))
            .expect("particles");
        let ground = StaticGeometry::ground(Material::default());
        World::new(vec![Arc::new(ground), Arc::new(particles)], WorldOptions::default()).expect("world")
    }

    #[test]
    fn particles_on_the_ground() {
        let w = world();
        let qs: Vec<Vec<f64>> = (0..101).map(|k| vec![0.0, 0.0, 1.0 - 0.005 * k as f64, 0.5, 0.0, 1.0]).collect();
        let opts =
            SceneOptions { frames: true, markers: vec![Marker::new("goal", [0.0, 0.0, 0.5])], ..Default::default() };
        let v = world_scene(&w, &qs, 0.01, &opts).expect("scene");
        assert_eq!(v["format"], FORMAT);
        assert_eq!(v["num_tracks"], 2);
        let times = v["times"].as_array().expect("times");
        assert_eq!(times.len(), 101); // dt = 10 ms: every row kept at 60 frames/s
        assert_eq!(v["shapes"].as_array().expect("shapes").len(), 3);
        assert_eq!(v["shapes"][0]["kind"], "plane");
        assert_eq!(v["shapes"][0]["track"], -1);
        assert_eq!(v["shapes"][2]["track"], 1);
        let last = &v["poses"][100][0];
        assert!((last[2].as_f64().expect("z") - 0.5).abs() < 1e-6);
        assert_eq!(v["frames"]["tracks"], json!([0, 1]));
        assert_eq!(v["markers"][0]["name"], "goal");
        let slow = world_scene(&w, &qs, 0.001, &SceneOptions { fps: 100.0, ..Default::default() }).expect("scene");
        assert_eq!(slow["times"].as_array().expect("times").len(), 11);
    }

    #[test]
    fn a_soft_body_is_drawn_by_its_surface() {
        use crate::soft::generate::box_mesh;
        use crate::soft::{MaterialModel, SoftBody, SoftMaterial, SoftOptions};
        use crate::world::SoftSystem;
        let mesh = box_mesh([2, 1, 1], Vec3::new(0.2, 0.1, 0.1), Vec3::zeros()).expect("mesh");
        let material = SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, 0.3, 1000.0);
        let body = Arc::new(SoftBody::builder(mesh, material).build().expect("body"));
        let soft = SoftSystem::new(body.clone(), SoftOptions::default(), Material::default(), 0.0).expect("system");
        let ground = StaticGeometry::ground(Material::default());
        let w = World::new(vec![Arc::new(ground), Arc::new(soft)], WorldOptions::default()).expect("world");
        let x0 = body.rest_positions();
        let moved: Vec<f64> = x0.iter().enumerate().map(|(i, x)| if i % 3 == 2 { x + 0.5 } else { *x }).collect();
        let qs = [x0.as_slice().to_vec(), moved.clone()];
        let v = world_scene(&w, &qs, 0.1, &SceneOptions::default()).expect("scene");
        assert_eq!(v["num_tracks"], 0);
        assert_eq!(v["shapes"].as_array().expect("shapes").len(), 1, "the ground only: no vertex shapes");
        let surface = &v["surfaces"][0];
        let n = body.mesh().num_vertices();
        assert_eq!(surface["num_vertices"], n);
        assert_eq!(surface["triangles"].as_array().expect("triangles").len(), w.systems()[1].surface_triangles().len());
        let last = &surface["positions"][1];
        assert_eq!(last.as_array().expect("frame").len(), n);
        for (k, p) in last.as_array().expect("frame").iter().enumerate() {
            for j in 0..3 {
                assert!((p[j].as_f64().expect("number") - moved[3 * k + j]).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let w = world();
        let ok = vec![vec![0.0; 6]; 3];
        let none: Vec<Vec<f64>> = Vec::new();
        assert!(world_scene(&w, &none, 0.01, &SceneOptions::default()).is_err());
        assert!(matches!(
            world_scene(&w, &[vec![0.0; 5]], 0.01, &SceneOptions::default()),
            Err(Error::Dimension { what: "q", expected: 6, got: 5 })
        ));
        let mut nan = ok.clone();
        nan[1][2] = f64::NAN;
        assert!(matches!(world_scene(&w, &nan, 0.01, &SceneOptions::default()), Err(Error::NonFinite { .. })));
        assert!(world_scene(&w, &ok, 0.0, &SceneOptions::default()).is_err());
        let contacts = SceneOptions { contacts: vec![Vec::new()], ..Default::default() };
        assert!(world_scene(&w, &ok, 0.01, &contacts).is_err());
    }
}
