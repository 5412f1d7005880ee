//! The layer tables of DESIGN.md hold: no module imports from a layer above its own, and no
//! two modules import each other, directly or around a circle.
//!
//! The tables are the ```` ```layers ```` block of DESIGN.md: `crate DIR` starts a crate's
//! table, then one line per layer, bottom first, naming module paths (`a::b`; `(root)` is
//! the crate root). A module belongs to the layer of its longest listed prefix. Imports are
//! read from the source text, as a reader would: every `crate::a::b` path, every `super::`
//! path (`use super::*` names the parent) and every `use child::..` of a module's own child.
//! Comments and `#[cfg(test)] mod tests { .. }` blocks do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

struct Table {
    dir: PathBuf,
    /// Layers bottom first: module paths ("" is the root).
    layers: Vec<Vec<String>>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tables() -> Vec<Table> {
    let design = std::fs::read_to_string(root().join("DESIGN.md")).expect("DESIGN.md");
    let start = design
        .find("```layers\n")
        .expect("a ```layers block in DESIGN.md");
    let body = &design[start + "```layers\n".len()..];
    let body = &body[..body.find("```").expect("the block ends")];
    let mut out: Vec<Table> = Vec::new();
    for line in body.lines() {
        let line = line.split('#').next().unwrap_or("").trim_end();
        if let Some(dir) = line.strip_prefix("crate ") {
            out.push(Table {
                dir: root().join(dir.trim()),
                layers: Vec::new(),
            });
        } else if !line.trim().is_empty() {
            let t = out.last_mut().expect("a `crate DIR` line first");
            t.layers.push(
                line.split_whitespace()
                    .map(|m| {
                        if m == "(root)" {
                            String::new()
                        } else {
                            m.to_string()
                        }
                    })
                    .collect(),
            );
        }
    }
    assert!(!out.is_empty(), "no tables");
    out
}

fn modules(dir: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<Module, PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(base).unwrap().with_extension("");
                let mut m: Module = rel
                    .iter()
                    .map(|c| c.to_string_lossy().into_owned())
                    .collect();
                if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                    m.pop();
                }
                out.insert(m, p);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The text without comments and without a trailing `#[cfg(test)] mod tests { .. }`.
fn code(text: &str) -> String {
    let cut = text
        .find("#[cfg(test)]\nmod tests {")
        .map_or(text, |i| &text[..i]);
    let mut out = String::new();
    let mut rest = cut;
    while !rest.is_empty() {
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            rest = &rest[end..];
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
            rest = &rest[end..];
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The longest prefix of `path` that is a module.
fn resolve(mods: &BTreeMap<Module, PathBuf>, path: &[String]) -> Option<Module> {
    (0..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|p| mods.contains_key(p))
}

/// Path segments after a position: `a::b::{..}` gives [a, b].
fn segments(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        let id: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if id.is_empty() {
            if rest.starts_with('*') {
                break;
            }
            break;
        }
        rest = &rest[id.len()..];
        out.push(id);
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    out
}

/// Every module `m` imports, with the line of the first such import.
fn imports(
    mods: &BTreeMap<Module, PathBuf>,
    foreign: &BTreeSet<String>,
    m: &Module,
    file: &Path,
) -> BTreeMap<Module, usize> {
    let text = code(&std::fs::read_to_string(file).unwrap());
    let is_dir_module = matches!(
        file.file_stem().and_then(|s| s.to_str()),
        Some("mod" | "lib" | "main")
    );
    // `super` is the parent of a file module, and of a directory module too.
    let parent: Module = m[..m.len().saturating_sub(1)].to_vec();
    let children: BTreeSet<String> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l
                .strip_prefix("pub(crate) ")
                .or(l.strip_prefix("pub "))
                .unwrap_or(l);
            l.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect();
    let mut out = BTreeMap::new();
    let mut add = |target: Option<Module>, line: usize| {
        if let Some(t) = target {
            if &t != m {
                out.entry(t).or_insert(line);
            }
        }
    };
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let mut at = 0;
        while let Some(p) = line[at..].find("crate::") {
            let start = at + p;
            let before = line[..start].chars().last();
            at = start + "crate::".len();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let segs = segments(&line[at..]);
            if segs.first().is_some_and(|f| foreign.contains(f)) {
                continue;
            }
            add(resolve(mods, &segs), n);
        }
        let mut at = 0;
        while let Some(p) = line[at..].find("super::") {
            let start = at + p;
            let before = line[..start].chars().last();
            at = start + "super::".len();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut base = parent.clone();
            let mut rest = &line[at..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
            let mut path = base;
            path.extend(segments(rest));
            add(resolve(mods, &path), n);
        }
        // A private `use child::..` is logic that depends on the child; a `pub use` of a
        // child's items is the parent's facade and does not count.
        if let Some(u) = line.trim_start().strip_prefix("use ") {
            let segs = segments(u);
            if let Some(first) = segs.first() {
                if children.contains(first) && is_dir_module {
                    let mut path = m.clone();
                    path.extend(segs);
                    add(resolve(mods, &path), n);
                }
            }
        }
    }
    out
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "(root)".into()
    } else {
        m.join("::")
    }
}

fn layer_of(t: &Table, m: &Module) -> Option<usize> {
    let s = name(m);
    let mut best: Option<(usize, usize)> = None;
    for (i, layer) in t.layers.iter().enumerate() {
        for p in layer {
            let matches = if p.is_empty() {
                m.is_empty()
            } else {
                s == *p || s.starts_with(&format!("{p}::"))
            };
            if matches && best.is_none_or(|(len, _)| p.len() > len) {
                best = Some((p.len(), i));
            }
        }
    }
    best.map(|(_, i)| i)
}

/// Strongly connected components of more than one module (Tarjan).
fn circles(graph: &BTreeMap<Module, BTreeMap<Module, usize>>) -> Vec<Vec<Module>> {
    struct S<'a> {
        g: &'a BTreeMap<Module, BTreeMap<Module, usize>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        stack: Vec<Module>,
        on: BTreeSet<Module>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    fn visit(s: &mut S<'_>, v: &Module) {
        s.index.insert(v.clone(), s.next);
        s.low.insert(v.clone(), s.next);
        s.next += 1;
        s.stack.push(v.clone());
        s.on.insert(v.clone());
        let targets: Vec<Module> =
            s.g.get(v)
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default();
        for w in targets {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(&w);
                let done = &w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let mut s = S {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Names `crate::NAME` may start with that are not this crate's modules: another crate the
/// root re-exports (`pub use other as NAME;`) and `#[macro_export]` macros.
fn foreign_names(mods: &BTreeMap<Module, PathBuf>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (m, file) in mods {
        let text = code(&std::fs::read_to_string(file).unwrap());
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            let l = l.trim();
            if m.is_empty() {
                if let Some(rest) = l.strip_prefix("pub use ") {
                    if let Some((path, alias)) = rest.trim_end_matches(';').split_once(" as ") {
                        if !path.starts_with("crate::") && !path.starts_with("self::") {
                            out.insert(alias.trim().to_string());
                        }
                    }
                }
            }
            if let Some(rest) = l.strip_prefix("macro_rules! ") {
                if i > 0 && lines[i - 1].trim() == "#[macro_export]" {
                    out.extend(segments(rest).into_iter().take(1));
                }
            }
        }
    }
    out
}

/// Every problem of one crate: unlisted modules, upward imports, circles.
fn check(t: &Table) -> Vec<String> {
    let mods = modules(&t.dir);
    let foreign = foreign_names(&mods);
    let mut graph = BTreeMap::new();
    let mut problems = Vec::new();
    for (m, file) in &mods {
        graph.insert(m.clone(), imports(&mods, &foreign, m, file));
    }
    for (m, targets) in &graph {
        let Some(lm) = layer_of(t, m) else {
            problems.push(format!(
                "{}: module {} is in no layer",
                t.dir.display(),
                name(m)
            ));
            continue;
        };
        for (target, line) in targets {
            let Some(lt) = layer_of(t, target) else {
                continue;
            };
            if lt > lm {
                problems.push(format!(
                    "{}:{line}: {} (layer {lm}) imports {} (layer {lt}, above it)",
                    mods[m].strip_prefix(root()).unwrap_or(&mods[m]).display(),
                    name(m),
                    name(target)
                ));
            }
        }
    }
    for c in circles(&graph) {
        let names: Vec<String> = c.iter().map(name).collect();
        problems.push(format!(
            "{}: import circle: {}",
            t.dir.display(),
            names.join(", ")
        ));
    }
    problems
}

#[test]
fn no_module_imports_from_a_layer_above_and_none_import_in_a_circle() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for t in tables() {
        checked += modules(&t.dir).len();
        problems.extend(check(&t));
    }
    assert!(checked > 100, "only {checked} modules read");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checker itself finds an upward import and a circle (a test that can fail).
#[test]
fn the_checker_sees_an_upward_import_and_a_circle() {
    let dir = std::env::temp_dir().join(format!("layers-selftest-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("low")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod low;\nmod high;\n").unwrap();
    std::fs::write(dir.join("low/mod.rs"), "mod a;\nuse crate::high::X;\n").unwrap();
    std::fs::write(
        dir.join("low/a.rs"),
        "use super::*; // a comment naming crate::high\n",
    )
    .unwrap();
    std::fs::write(dir.join("high.rs"), "pub struct X;\nuse crate::low::a;\n").unwrap();
    let t = Table {
        dir: dir.clone(),
        layers: vec![vec!["low".into()], vec!["high".into(), String::new()]],
    };
    let problems = check(&t);
    std::fs::remove_dir_all(&dir).unwrap();
    let text = problems.join("\n");
    assert!(
        text.contains("low (layer 0) imports high (layer 1, above it)"),
        "{text}"
    );
    assert!(text.contains("import circle: "), "{text}");
    // The comment naming crate::high is not an import; `use super::*` is.
    assert!(!text.contains("low::a (layer 0) imports high"), "{text}");
    assert_eq!(problems.len(), 2, "{text}");
}

/// The driver's modules the device model may use: its ground floor (the lock helper, the PRM
/// as data, the DPA image formats, the DevX trait the model implements). Everything above
/// (memory, doorbells, queues, FlexIO, DOCA, GPU) is a driver the model must not lean on.
const MODEL_MAY_USE: &[&str] = &["sync", "mlx5", "image", "devx"];

/// Files of the model that are not the device: the host the `sim` command runs on the model's
/// port (it drives the model through the driver's own queues, as any host would) and the test
/// support (rigs, fuzz drivers, the fault sweep).
const MODEL_HOSTS: &[&str] = &["responder.rs", "testing/"];

/// The driver's modules `text` names (`mlx5_dpa::X`), outside comments.
fn driver_modules(text: &str) -> BTreeSet<String> {
    let code = code(text);
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("mlx5_dpa::") {
        let rest = &code[i + "mlx5_dpa::".len()..];
        let m: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !m.is_empty() {
            out.insert(m);
        }
    }
    out
}

/// Regression (issue 31): the model reached into the driver's upper floors (the ELF reader
/// and signature check of `dpa`, DOCA's run-time limit, the queues' ring arithmetic).
#[test]
fn the_device_model_stands_on_the_drivers_ground_floor() {
    let dir = root().join("sim/src");
    let mut problems = Vec::new();
    let mut read = 0;
    for (m, path) in modules(&dir) {
        let rel = path.strip_prefix(&dir).unwrap().display().to_string();
        if MODEL_HOSTS.iter().any(|h| rel == *h || rel.starts_with(h)) {
            continue;
        }
        read += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        for used in driver_modules(&text) {
            if !MODEL_MAY_USE.contains(&used.as_str()) {
                problems.push(format!("{} ({rel}) uses mlx5_dpa::{used}", name(&m)));
            }
        }
    }
    assert!(read > 50, "only {read} model files read");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The check sees a use of an upper floor (it can fail).
    let upper =
        driver_modules("use mlx5_dpa::queues::ring::wqebbs; // mlx5_dpa::doca in a comment");
    assert_eq!(upper.into_iter().collect::<Vec<_>>(), ["queues"]);
}
