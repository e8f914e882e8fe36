//! The mutator: how case `i` of a target is made from its corpus. Bytes are flipped, cut,
//! repeated and spliced, tokens inserted, lines shuffled and numbers swapped for edge values;
//! JSON documents and JSON lines are also changed as values (a node replaced by an edge value
//! or a value seen in the corpus, removed, duplicated), so typed parsers see inputs that get
//! past their syntax.

use serde_json::Value;

use crate::targets::{Format, Target};

/// SplitMix64: small, fast, and the same on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// FNV-1a, for seeds from names and names of saved inputs.
pub fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Tokens every target gets: JSON and text structure, path tricks, number edges.
const GENERIC: &[&str] = &[
    "\n",
    "\r\n",
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\\",
    "\\u0000",
    "\\ud800",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "-0",
    "1e400",
    "1.5",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "../",
    "/",
    "..",
    ".",
    "~",
    "\0",
    "é",
    "\u{2028}",
    "\u{feff}",
    "---\n",
    "{{",
    "}}",
    "<",
    ">",
    "&amp;",
    "#",
    "- ",
    " ",
    "\t",
];

/// Numbers and strings that break assumptions, for JSON mutation.
fn interesting_values() -> Vec<Value> {
    vec![
        Value::Null,
        Value::Bool(true),
        Value::Bool(false),
        0.into(),
        1.into(),
        (-1).into(),
        u64::from(u32::MAX).into(),
        (u64::from(u32::MAX) + 1).into(),
        u64::MAX.into(),
        i64::MIN.into(),
        1.5.into(),
        "".into(),
        " ".into(),
        "../x".into(),
        "/tmp/x".into(),
        "a/b".into(),
        ".hidden".into(),
        "é".repeat(300).into(),
        "x".repeat(5000).into(),
        "{{bead.id}}".into(),
        "{{".into(),
        "9999-12-31T23:59:59Z".into(),
        "not a time".into(),
        Value::Array(vec![]),
        Value::Object(serde_json::Map::new()),
    ]
}

/// Strings, numbers and keys found in the seeds: replacements that keep a typed parser happy.
pub struct Pool {
    /// The edge values first (`edges` of them), then the seeds' values.
    values: Vec<Value>,
    edges: usize,
    keys: Vec<String>,
}

impl Pool {
    /// An edge value half the time, else a value from the seeds.
    fn value(&self, rng: &mut Rng) -> Value {
        if rng.chance(2) || self.values.len() == self.edges {
            self.values[rng.below(self.edges)].clone()
        } else {
            self.values[self.edges + rng.below(self.values.len() - self.edges)].clone()
        }
    }
}

impl Pool {
    pub fn from_seeds(seeds: &[(String, Vec<u8>)]) -> Pool {
        let mut values = interesting_values();
        let edges = values.len();
        let mut keys = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        fn walk(
            v: &Value,
            values: &mut Vec<Value>,
            keys: &mut Vec<String>,
            seen: &mut std::collections::BTreeSet<String>,
        ) {
            if values.len() > 4000 {
                return;
            }
            match v {
                Value::Array(items) => {
                    for i in items {
                        walk(i, values, keys, seen);
                    }
                }
                Value::Object(map) => {
                    for (k, i) in map {
                        if seen.insert(format!("k{k}")) {
                            keys.push(k.clone());
                        }
                        walk(i, values, keys, seen);
                    }
                }
                leaf => {
                    if seen.insert(format!("v{leaf}")) {
                        values.push(leaf.clone());
                    }
                }
            }
        }
        for (_, bytes) in seeds {
            let values_in = serde_json::Deserializer::from_slice(bytes).into_iter::<Value>();
            for v in values_in.take(64) {
                let Ok(v) = v else { break };
                walk(&v, &mut values, &mut keys, &mut seen);
            }
        }
        Pool {
            values,
            edges,
            keys,
        }
    }
}

/// Paths of every node of a JSON value (as pointer segments), the root included.
fn node_paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if out.len() > 20_000 {
        return;
    }
    out.push(at.clone());
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(i.to_string());
                node_paths(item, at, out);
                at.pop();
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                at.push(k.clone());
                node_paths(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn node_mut<'v>(v: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    path.iter().try_fold(v, |v, seg| match v {
        Value::Array(items) => items.get_mut(seg.parse::<usize>().ok()?),
        Value::Object(map) => map.get_mut(seg),
        _ => None,
    })
}

fn node<'v>(v: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, seg| match v {
        Value::Array(items) => items.get(seg.parse::<usize>().ok()?),
        Value::Object(map) => map.get(seg),
        _ => None,
    })
}

/// One JSON-level change: replace a node by a pooled value or another node, delete a member or
/// element, duplicate an element, or add a pooled key.
fn mutate_json(rng: &mut Rng, v: &mut Value, pool: &Pool) {
    let mut paths = Vec::new();
    node_paths(v, &mut Vec::new(), &mut paths);
    if rng.chance(4) {
        // A string leaf (ids, steps, paths live in strings) becomes an edge string.
        const STRINGS: &[&str] = &[
            "", " ", "../x", "../../x", "a/b", ".hidden", "x..y", "{{", "é",
        ];
        let strings: Vec<&Vec<String>> = paths
            .iter()
            .filter(|p| node(v, p).is_some_and(Value::is_string))
            .collect();
        if !strings.is_empty() {
            let path = rng.pick(&strings).to_vec();
            let new = Value::from(*rng.pick(STRINGS));
            if let Some(n) = node_mut(v, &path) {
                *n = new;
            }
            return;
        }
    }
    let path = rng.pick(&paths).clone();
    match rng.below(6) {
        0 | 1 => {
            let new = pool.value(rng);
            if let Some(n) = node_mut(v, &path) {
                *n = new;
            }
        }
        2 => {
            let other = rng.pick(&paths).clone();
            let copy = node(v, &other).cloned();
            if let (Some(copy), Some(n)) = (copy, node_mut(v, &path)) {
                *n = copy;
            }
        }
        3 => {
            if let Some((last, parent)) = path.split_last()
                && let Some(p) = node_mut(v, parent)
            {
                match p {
                    Value::Array(items) => {
                        if let Ok(i) = last.parse::<usize>()
                            && i < items.len()
                        {
                            items.remove(i);
                        }
                    }
                    Value::Object(map) => {
                        map.shift_remove(last);
                    }
                    _ => {}
                }
            }
        }
        4 => {
            if let Some(Value::Array(items)) = node_mut(v, &path)
                && !items.is_empty()
            {
                let i = rng.below(items.len());
                let copy = items[i].clone();
                let at = rng.below(items.len() + 1);
                items.insert(at, copy);
            }
        }
        _ => {
            let key = if pool.keys.is_empty() || rng.chance(4) {
                "x".to_string()
            } else {
                rng.pick(&pool.keys).clone()
            };
            let value = pool.value(rng);
            if let Some(Value::Object(map)) = node_mut(v, &path) {
                map.insert(key, value);
            }
        }
    }
}

fn mutate_bytes(rng: &mut Rng, data: &mut Vec<u8>, dict: &[&str], other: &[u8]) {
    let len = data.len();
    let at = rng.below(len + 1);
    match rng.below(11) {
        0 if len > 0 => data[rng.below(len)] ^= 1 << rng.below(8),
        1 if len > 0 => {
            const BYTES: &[u8] = b"\0\xff\n\"{}[],:\\0- \x80\xc3";
            data[rng.below(len)] = *rng.pick(BYTES);
        }
        2 if len > 0 => {
            let most = if rng.chance(4) { len } else { 16.min(len) };
            let n = 1 + rng.below(most);
            let start = rng.below(len - n + 1);
            data.drain(start..start + n);
        }
        3 => {
            let n = 1 + rng.below(8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            data.splice(at..at, bytes);
        }
        4 | 5 => {
            let token = if rng.chance(2) && !dict.is_empty() {
                rng.pick(dict)
            } else {
                rng.pick(GENERIC)
            };
            if rng.chance(3) && len > 0 {
                let n = rng.below(8.min(len - at.min(len)) + 1);
                data.splice(at..(at + n).min(len), token.bytes());
            } else {
                data.splice(at..at, token.bytes());
            }
        }
        6 if len > 0 => {
            let n = 1 + rng.below(64.min(len));
            let start = rng.below(len - n + 1);
            let chunk = data[start..start + n].to_vec();
            let times = if rng.chance(16) { 1 + rng.below(64) } else { 1 };
            for _ in 0..times {
                let at = rng.below(data.len() + 1);
                data.splice(at..at, chunk.iter().copied());
            }
        }
        7 if !other.is_empty() => {
            let cut = rng.below(other.len());
            data.truncate(at);
            data.extend_from_slice(&other[cut..]);
        }
        8 => data.truncate(at),
        9 => {
            // Line surgery: duplicate, drop or swap whole lines.
            let mut lines: Vec<Vec<u8>> = data
                .split_inclusive(|b| *b == b'\n')
                .map(<[u8]>::to_vec)
                .collect();
            if !lines.is_empty() {
                let i = rng.below(lines.len());
                match rng.below(3) {
                    0 => {
                        let copy = lines[i].clone();
                        lines.insert(rng.below(lines.len() + 1), copy);
                    }
                    1 => {
                        lines.remove(i);
                    }
                    _ => {
                        let j = rng.below(lines.len());
                        lines.swap(i, j);
                    }
                }
                *data = lines.concat();
            }
        }
        _ => {
            // Replace a run of digits by an edge number.
            const NUMBERS: &[&str] = &[
                "0",
                "-1",
                "1",
                "4294967295",
                "4294967296",
                "18446744073709551615",
                "18446744073709551616",
                "1e308",
                "-0",
                "0.5",
            ];
            if let Some(start) = (at..len).find(|i| data[*i].is_ascii_digit()) {
                let end = (start..len)
                    .find(|i| !data[*i].is_ascii_digit())
                    .unwrap_or(len);
                data.splice(start..end, rng.pick(NUMBERS).bytes());
            }
        }
    }
}

/// Build case `i`'s input from the pool of bases.
pub fn generate(rng: &mut Rng, bases: &[Vec<u8>], t: &Target, pool: &Pool) -> Vec<u8> {
    let base = rng.pick(bases);
    let other = rng.pick(bases);
    if t.format == Format::Json
        && rng.chance(2)
        && let Ok(mut v) = serde_json::from_slice::<Value>(base)
    {
        for _ in 0..1 + rng.below(4) {
            mutate_json(rng, &mut v, pool);
        }
        let mut out = if rng.chance(2) {
            serde_json::to_vec_pretty(&v)
        } else {
            serde_json::to_vec(&v)
        }
        .expect("a JSON value serializes");
        if rng.chance(8) {
            mutate_bytes(rng, &mut out, t.dict, other);
        }
        return out;
    }
    if t.format == Format::JsonLines && rng.chance(2) {
        let mut lines: Vec<Vec<u8>> = base
            .split_inclusive(|b| *b == b'\n')
            .map(<[u8]>::to_vec)
            .collect();
        let json: Vec<usize> = (0..lines.len())
            .filter(|i| serde_json::from_slice::<Value>(&lines[*i]).is_ok())
            .collect();
        if !json.is_empty() {
            // Mostly the last JSON line: recovery and a log's result event live there.
            let i = if rng.chance(2) {
                json[json.len() - 1]
            } else {
                *rng.pick(&json)
            };
            let mut v: Value = serde_json::from_slice(&lines[i]).expect("parsed above");
            for _ in 0..1 + rng.below(3) {
                mutate_json(rng, &mut v, pool);
            }
            let mut line = serde_json::to_vec(&v).expect("a JSON value serializes");
            if lines[i].ends_with(b"\n") {
                line.push(b'\n');
            }
            lines[i] = line;
            let mut out = lines.concat();
            if rng.chance(8) {
                mutate_bytes(rng, &mut out, t.dict, other);
            }
            return out;
        }
    }
    let mut out = base.clone();
    let most = if rng.chance(4) { 8 } else { 3 };
    for _ in 0..1 + rng.below(most) {
        mutate_bytes(rng, &mut out, t.dict, other);
    }
    out
}
