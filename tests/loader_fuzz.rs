//! Fuzz test of the URDF and MJCF loaders (issue #16): 300 seeded mutations each of the
//! fixture robots —
//! deleted attributes and elements, numbers replaced by NaN, infinities, negatives, huge
//! and tiny values or words, truncated text, duplicated lines, unknown joint types and
//! link names, missing meshes, flipped characters. Every case must end in a model (with
//! warnings that name the file) or a typed `LoadError` whose message names the file,
//! never a panic; a model that loads must also survive its mass matrix, a forward
//! dynamics call and a simulator step at its neutral configuration (each `Ok` or a typed
//! error).

use nalgebra::DVector;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use stiction::dynamics::{aba, crba, Data};
use stiction::io::{parse_mjcf, parse_urdf, MjcfOptions, UrdfOptions};
use stiction::math::SplitMix64;
use stiction::{Control, SimOptions, Simulator, State};

const CASES: usize = 300;
const SEED: u64 = 20261127;

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/urdf").join(p)
}

/// The byte ranges of the attribute values (`name="value"`) of `xml`.
fn attribute_values(xml: &str) -> Vec<(usize, usize)> {
    let bytes = xml.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while let Some(k) = xml[i..].find("=\"") {
        let start = i + k + 2;
        let Some(len) = xml[start..].find('"') else { break };
        out.push((start, start + len));
        i = start + len + 1;
        if i >= bytes.len() {
            break;
        }
    }
    out
}

/// The byte ranges of whole attributes (` name="value"`).
fn attributes(xml: &str) -> Vec<(usize, usize)> {
    attribute_values(xml)
        .into_iter()
        .filter_map(|(s, e)| {
            let name_start = xml[..s - 2].rfind(' ')?;
            Some((name_start, e + 1))
        })
        .collect()
}

fn pick<T: Copy>(rng: &mut SplitMix64, xs: &[T]) -> Option<T> {
    (!xs.is_empty()).then(|| xs[(rng.next_u64() % xs.len() as u64) as usize])
}

/// One seeded mutation of `xml`, and what it did (for the failure message).
fn mutate(xml: &str, rng: &mut SplitMix64) -> (String, String) {
    let mut s = xml.to_string();
    let lines: Vec<&str> = xml.lines().collect();
    let kind = rng.next_u64() % 10;
    let what = match kind {
        0 => match pick(rng, &attributes(xml)) {
            Some((a, b)) => {
                let w = format!("deleted attribute {}", &s[a..b]);
                s.replace_range(a..b, "");
                w
            }
            None => "nothing".into(),
        },
        1 | 2 => {
            let words =
                ["nan", "inf", "-inf", "-1", "0", "1e308", "-1e308", "1e-320", "abc", "", "1 2", "0 0 0", "-0.5 nan 1"];
            match (pick(rng, &attribute_values(xml)), pick(rng, &words)) {
                (Some((a, b)), Some(w)) => {
                    let out = format!("value '{}' -> '{w}'", &s[a..b]);
                    s.replace_range(a..b, w);
                    out
                }
                _ => "nothing".into(),
            }
        }
        3 => {
            let cut = (rng.next_u64() % xml.len() as u64) as usize;
            let cut = (0..=cut).rev().find(|&c| xml.is_char_boundary(c)).unwrap_or(0);
            s.truncate(cut);
            format!("truncated at byte {cut}")
        }
        4 => {
            let k = (rng.next_u64() % lines.len() as u64) as usize;
            let mut l = lines.clone();
            let removed = l.remove(k);
            s = l.join("\n");
            format!("deleted line {k}: {removed}")
        }
        5 => {
            let k = (rng.next_u64() % lines.len() as u64) as usize;
            let mut l = lines.clone();
            l.insert(k, lines[k]);
            s = l.join("\n");
            format!("duplicated line {k}: {}", lines[k])
        }
        6 => {
            let types = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "ball", "screw", "foo"];
            let occurrences: Vec<usize> = xml.match_indices("type=\"").map(|(i, _)| i + 6).collect();
            match (pick(rng, &occurrences), pick(rng, &types)) {
                (Some(at), Some(t)) => {
                    let end = at + s[at..].find('"').unwrap_or(0);
                    s.replace_range(at..end, t);
                    format!("a type -> {t}")
                }
                _ => "nothing".into(),
            }
        }
        7 => {
            let refs: Vec<usize> = xml.match_indices("link=\"").map(|(i, _)| i + 6).collect();
            match pick(rng, &refs) {
                Some(at) => {
                    let end = at + s[at..].find('"').unwrap_or(0);
                    s.replace_range(at..end, "no_such_link");
                    "a link reference -> no_such_link".into()
                }
                None => "nothing".into(),
            }
        }
        8 => {
            let meshes: Vec<usize> = xml.match_indices("filename=\"").map(|(i, _)| i + 10).collect();
            match pick(rng, &meshes) {
                Some(at) => {
                    let end = at + s[at..].find('"').unwrap_or(0);
                    s.replace_range(at..end, "meshes/missing.stl");
                    "a mesh -> meshes/missing.stl".into()
                }
                None => "nothing".into(),
            }
        }
        _ => {
            // Flip a character to another printable one (kept valid UTF-8).
            let positions: Vec<usize> = s.char_indices().filter(|(_, c)| c.is_ascii()).map(|(i, _)| i).collect();
            match pick(rng, &positions) {
                Some(at) => {
                    let c = (b' ' + (rng.next_u64() % 95) as u8) as char;
                    s.replace_range(at..at + 1, &c.to_string());
                    format!("byte {at} -> '{c}'")
                }
                None => "nothing".into(),
            }
        }
    };
    (s, what)
}

/// A loaded model's mass matrix, forward dynamics and one simulator step at its neutral
/// configuration: each `Ok` or a typed error (a panic fails the caller).
fn exercise(model: &stiction::Model) {
    let q = model.neutral();
    let nv = model.nv();
    let mut data = Data::new(model);
    let _ = crba(model, &mut data, q.as_slice());
    let _ = aba(model, &mut data, q.as_slice(), &vec![0.0; nv], &vec![0.0; nv], None);
    if let Ok(mut sim) = Simulator::new(model.clone(), SimOptions::default()) {
        let state = State { q, v: DVector::zeros(nv) };
        let _ = sim.step(&state, &Control::torques(DVector::zeros(nv)));
    }
}

/// A loader under test: text and strictness to the model and its warnings.
type Loader<'a> = &'a dyn Fn(&str, bool) -> Result<(stiction::Model, Vec<String>), stiction::LoadError>;

/// Runs `load` (text, strict) on `CASES` mutations of `sources`; asserts no panic, and
/// that the mutations both pass and fail. `load` returns the model and its warnings.
fn fuzz(sources: &[String], load: Loader) {
    let mut rng = SplitMix64::new(SEED);
    let (mut loaded, mut refused, mut panics) = (0, 0, vec![]);
    for case in 0..CASES {
        let source = &sources[case % sources.len()];
        let (xml, what) = mutate(source, &mut rng);
        let outcome = catch_unwind(AssertUnwindSafe(|| match load(&xml, case % 4 == 3) {
            Ok((model, warnings)) => {
                for w in &warnings {
                    assert!(w.contains("<string>"), "case {case} ({what}): a warning that does not name the file: {w}");
                }
                exercise(&model);
                true
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("<string>"), "case {case} ({what}): an error that does not name the file: {msg}");
                false
            }
        }));
        match outcome {
            Ok(true) => loaded += 1,
            Ok(false) => refused += 1,
            Err(_) => panics.push(format!("case {case}: {what}")),
        }
    }
    eprintln!("{loaded} loaded, {refused} refused, {} panics of {CASES}", panics.len());
    assert!(panics.is_empty(), "{} panics:\n{}", panics.len(), panics.join("\n"));
    // The mutations bite, and not every one of them.
    assert!(loaded >= 30 && refused >= 30, "{loaded} loaded, {refused} refused of {CASES}");
}

#[test]
fn mutated_urdf_files_load_or_fail_with_typed_errors_never_panic() {
    let sources: Vec<String> = ["full.urdf", "world.urdf", "mimic.urdf"]
        .iter()
        .map(|f| std::fs::read_to_string(fixture(f)).unwrap())
        .collect();
    let base = fixture("");
    let options = UrdfOptions { package_dirs: vec![fixture("packages")], ..Default::default() };
    let strict = UrdfOptions { strict: true, ..options.clone() };
    fuzz(&sources, &|xml, is_strict| {
        parse_urdf(xml, Some(&base), if is_strict { &strict } else { &options }).map(|r| (r.model, r.warnings))
    });
}

#[test]
fn mutated_mjcf_files_load_or_fail_with_typed_errors_never_panic() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mjcf/arm.xml");
    let sources = vec![std::fs::read_to_string(&path).unwrap()];
    let base = path.parent().unwrap().to_path_buf();
    fuzz(&sources, &|xml, strict| {
        parse_mjcf(xml, Some(&base), &MjcfOptions { strict, ..Default::default() }).map(|r| (r.model, r.warnings))
    });
}
