//! What the XML loaders (URDF, MJCF) share: the line of an element, errors and warnings
//! that name the file, the element and the line, and number lists read from attributes.

use crate::error::LoadError;
use roxmltree::{Document, Node};
use std::fmt::Display;

/// The 1-based line of element `n`.
pub(crate) fn line(doc: &Document, n: Node) -> u32 {
    doc.text_pos_at(n.range().start).row
}

/// A [`LoadError::Malformed`] naming the file, the element and the line.
pub(crate) fn malformed(doc: &Document, file: &str, n: Node, element: &str, reason: impl Display) -> LoadError {
    LoadError::Malformed {
        file: file.into(),
        element: element.into(),
        reason: format!("{reason} (line {})", line(doc, n)),
    }
}

/// A warning naming the file and the line.
pub(crate) fn warning(doc: &Document, file: &str, n: Node, msg: impl Display) -> String {
    format!("{file}:{}: {msg}", line(doc, n))
}

/// The finite numbers of attribute `name` (text `text`) of element `n`, exactly `count`
/// of them when given.
pub(crate) fn numbers(
    doc: &Document,
    file: &str,
    n: Node,
    element: &str,
    name: &str,
    text: &str,
    count: Option<usize>,
) -> Result<Vec<f64>, LoadError> {
    let mut out = Vec::with_capacity(count.unwrap_or(4));
    for tok in text.split_whitespace() {
        let x: f64 = tok
            .parse()
            .map_err(|_| malformed(doc, file, n, element, format!("attribute '{name}': '{tok}' is not a number")))?;
        if !x.is_finite() {
            return Err(malformed(
                doc,
                file,
                n,
                element,
                format!("attribute '{name}': '{tok}' is not a finite number"),
            ));
        }
        out.push(x);
    }
    if let Some(c) = count {
        if out.len() != c {
            return Err(malformed(
                doc,
                file,
                n,
                element,
                format!("attribute '{name}' has {} numbers ('{text}'), expected {c}", out.len()),
            ));
        }
    }
    Ok(out)
}
