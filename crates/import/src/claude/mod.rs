//! Claude Code sessions (`~/.claude/projects/<dir>/<uuid>.jsonl`): pass 1 and the branch.
//!
//! Pass 1 ([`Index::add`]) keeps, per line, only its place in the file, its kind, its
//! `uuid`/`parentUuid`/`logicalParentUuid` edges and the tool ids it holds. [`plan`] then picks
//! the conversation to import, purely from that index:
//! - the latest branch: from the last non-sidechain `user`/`assistant` line in file order, back
//!   along `parentUuid` (across a compact boundary along `logicalParentUuid`) to the root;
//! - every line keeps its edge whatever its type, so `progress`/`attachment` lines do not cut
//!   the chain; a duplicate uuid keeps its first line, a cycle or a missing parent ends the walk
//!   (each counted as a problem, never a panic);
//! - results of parallel calls that Claude Code parented on the call's line (off the branch)
//!   are spliced in right after the line holding their call;
//! - sidechain (sub-agent) lines are never on the branch: the main conversation has the Task
//!   call and its result, which is the sub-agent's final answer.
//!
//! Every line not planned is counted in the report under its reason. [`convert`] turns the
//! planned lines into events.

pub(crate) mod convert;

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::Value;

use crate::lines::LineRef;
use crate::report::Report;

/// What a line is, as far as the branch is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    User,
    Assistant,
    /// Another chain line (`system`, `progress`, `attachment`, ...): an edge, converted or
    /// counted in pass 2.
    Chain,
    /// A line outside the chain (`summary`, titles, snapshots, ...).
    Metadata,
    /// Not a JSON object.
    Unreadable,
}

/// One line of pass 1.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub line: LineRef,
    pub kind: Kind,
    pub ty: String,
    pub uuid: Option<String>,
    pub parent: Option<String>,
    pub logical: Option<String>,
    pub sidechain: bool,
    /// `tool_use` ids (assistant lines).
    pub calls: Vec<String>,
    /// `tool_result` ids (user lines).
    pub results: Vec<String>,
}

/// What the header needs, gathered in pass 1.
#[derive(Clone, Debug, Default)]
pub(crate) struct Meta {
    pub cwd: Option<String>,
    pub session_id: Option<String>,
    pub version: Option<String>,
    pub model: Option<String>,
    pub custom_title: Option<String>,
    pub ai_title: Option<String>,
    pub summary_title: Option<String>,
}

/// Pass 1's index of a Claude Code file.
#[derive(Debug, Default)]
pub(crate) struct Index {
    pub nodes: Vec<Node>,
    pub meta: Meta,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    ty: Option<Value>,
    uuid: Option<Value>,
    #[serde(rename = "parentUuid")]
    parent: Option<Value>,
    #[serde(rename = "logicalParentUuid")]
    logical: Option<Value>,
    #[serde(rename = "isSidechain")]
    sidechain: Option<Value>,
    cwd: Option<Value>,
    #[serde(rename = "sessionId")]
    session_id: Option<Value>,
    version: Option<Value>,
    message: Option<EnvMessage>,
    summary: Option<Value>,
    #[serde(rename = "customTitle")]
    custom_title: Option<Value>,
    #[serde(rename = "aiTitle")]
    ai_title: Option<Value>,
}

#[derive(Deserialize)]
struct EnvMessage {
    model: Option<Value>,
    #[serde(default, deserialize_with = "ids::content_ids")]
    content: Vec<ids::BlockIds>,
}

fn string(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

impl Index {
    /// Pass 1: indexes one line.
    pub fn add(&mut self, line: LineRef, bytes: &[u8]) {
        let Ok(env) = serde_json::from_slice::<Envelope>(bytes) else {
            self.nodes.push(Node::bare(line, Kind::Unreadable, "unreadable"));
            return;
        };
        let ty = string(env.ty).unwrap_or_default();
        let kind = match ty.as_str() {
            "user" => Kind::User,
            "assistant" => Kind::Assistant,
            _ if env.uuid.is_some() => Kind::Chain,
            _ => Kind::Metadata,
        };
        let m = &mut self.meta;
        if let Some(cwd) = string(env.cwd) {
            m.cwd.get_or_insert(cwd);
        }
        if let Some(id) = string(env.session_id) {
            m.session_id.get_or_insert(id);
        }
        if let Some(v) = string(env.version) {
            m.version = Some(v);
        }
        match ty.as_str() {
            "custom-title" => m.custom_title = string(env.custom_title).or(m.custom_title.take()),
            "ai-title" => m.ai_title = string(env.ai_title).or(m.ai_title.take()),
            "summary" if m.summary_title.is_none() => m.summary_title = string(env.summary),
            _ => {}
        }
        let sidechain = matches!(env.sidechain, Some(Value::Bool(true)));
        let (mut calls, mut results) = (Vec::new(), Vec::new());
        if let Some(message) = env.message {
            if kind == Kind::Assistant && !sidechain {
                if let Some(model) = string(message.model).filter(|m| m != "<synthetic>") {
                    self.meta.model = Some(model);
                }
            }
            for block in message.content {
                match (kind, block.ty.as_deref()) {
                    (Kind::Assistant, Some("tool_use")) => calls.extend(block.id),
                    (Kind::User, Some("tool_result")) => results.extend(block.tool_use_id),
                    _ => {}
                }
            }
        }
        self.nodes.push(Node {
            line,
            kind,
            ty,
            uuid: string(env.uuid),
            parent: string(env.parent),
            logical: string(env.logical),
            sidechain,
            calls,
            results,
        });
    }
}

impl Node {
    fn bare(line: LineRef, kind: Kind, ty: &str) -> Node {
        Node {
            line,
            kind,
            ty: ty.to_owned(),
            uuid: None,
            parent: None,
            logical: None,
            sidechain: false,
            calls: Vec::new(),
            results: Vec::new(),
        }
    }
}

/// The lines to convert, in conversation order (indices into `index.nodes`). Lines left out
/// are counted in `report`.
pub(crate) fn plan(index: &Index, report: &mut Report) -> Vec<usize> {
    let nodes = &index.nodes;
    let (by_uuid, duplicate) = first_by_uuid(nodes, report);
    // A sub-agent's own transcript (`agent-*.jsonl`: every message a sidechain line) is a
    // conversation of its own, imported as such; in a main session its sidechains stay out.
    let own_sidechain =
        !nodes.iter().any(|n| matches!(n.kind, Kind::User | Kind::Assistant) && !n.sidechain);
    report.subagent = own_sidechain && nodes.iter().any(|n| n.sidechain);
    let planner = Planner { nodes, by_uuid, duplicate, own_sidechain };
    let chain = planner.chain(report);
    let on_chain: HashSet<usize> = chain.iter().copied().collect();
    let (order, spliced) = planner.splice_results(&chain, &on_chain);
    planner.count_unused(&on_chain, &spliced, report);
    order
}

/// Each uuid's first line, and which lines repeat an earlier uuid (each counted as a problem).
fn first_by_uuid<'a>(
    nodes: &'a [Node],
    report: &mut Report,
) -> (HashMap<&'a str, usize>, Vec<bool>) {
    let mut by_uuid: HashMap<&str, usize> = HashMap::new();
    let mut duplicate = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        if let Some(uuid) = &node.uuid {
            if by_uuid.contains_key(uuid.as_str()) {
                duplicate[i] = true;
                report.problem("duplicate uuid (the first line with it is used)");
            } else {
                by_uuid.insert(uuid, i);
            }
        }
    }
    (by_uuid, duplicate)
}

/// What planning the branch shares between its steps.
struct Planner<'a> {
    nodes: &'a [Node],
    /// Each uuid's first line.
    by_uuid: HashMap<&'a str, usize>,
    /// Lines repeating an earlier uuid.
    duplicate: Vec<bool>,
    /// The file is a sub-agent's own transcript: its sidechain lines are its conversation.
    own_sidechain: bool,
}

impl Planner<'_> {
    fn on_branch_kind(&self, n: &Node) -> bool {
        self.own_sidechain || !n.sidechain
    }

    /// The latest branch, root first: from the last usable message line back along its
    /// parents; a cycle or a missing parent ends the walk (counted as a problem).
    fn chain(&self, report: &mut Report) -> Vec<usize> {
        let (nodes, duplicate) = (self.nodes, &self.duplicate);
        let leaf = nodes.iter().enumerate().rposition(|(i, n)| {
            matches!(n.kind, Kind::User | Kind::Assistant)
                && self.on_branch_kind(n)
                && n.uuid.is_some()
                && !duplicate[i]
        });
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = leaf;
        while let Some(i) = cur {
            if !seen.insert(i) {
                report.problem("parent cycle (the conversation starts after it)");
                break;
            }
            chain.push(i);
            let node = &nodes[i];
            let next = node.parent.as_deref().or(node.logical.as_deref());
            cur = match next {
                None => None,
                Some(id) => match self.by_uuid.get(id) {
                    Some(&p) => Some(p),
                    None => {
                        report.problem("missing parent (the conversation starts after it)");
                        None
                    }
                },
            };
        }
        chain.reverse();
        chain
    }

    /// The chain with the results of its unanswered calls that were parented off it spliced
    /// in right after the line holding their call; and the lines spliced.
    fn splice_results(
        &self,
        chain: &[usize],
        on_chain: &HashSet<usize>,
    ) -> (Vec<usize>, HashSet<usize>) {
        let nodes = self.nodes;
        let answered: HashSet<&str> =
            chain.iter().flat_map(|&i| nodes[i].results.iter().map(String::as_str)).collect();
        let mut off_chain_results: HashMap<&str, usize> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == Kind::User
                && self.on_branch_kind(n)
                && !self.duplicate[i]
                && !on_chain.contains(&i)
            {
                for id in &n.results {
                    off_chain_results.entry(id.as_str()).or_insert(i);
                }
            }
        }
        let mut order = Vec::with_capacity(chain.len());
        let mut spliced = HashSet::new();
        for &i in chain {
            order.push(i);
            for call in &nodes[i].calls {
                if answered.contains(call.as_str()) {
                    continue;
                }
                if let Some(&r) = off_chain_results.get(call.as_str()) {
                    if spliced.insert(r) {
                        order.push(r);
                    }
                }
            }
        }
        (order, spliced)
    }

    /// Counts every line not planned in `report`, under its reason.
    fn count_unused(
        &self,
        on_chain: &HashSet<usize>,
        spliced: &HashSet<usize>,
        report: &mut Report,
    ) {
        for (i, n) in self.nodes.iter().enumerate() {
            if on_chain.contains(&i) || spliced.contains(&i) {
                continue;
            }
            if n.sidechain && !self.own_sidechain {
                report.sidechain_lines += 1;
                continue;
            }
            let reason = match n.kind {
                Kind::Unreadable => {
                    "unreadable line (not a JSON object of the expected shape)".into()
                }
                Kind::Metadata => format!("metadata line ({})", label(&n.ty)),
                _ if self.duplicate[i] => "line repeating an earlier uuid".into(),
                Kind::Chain => format!("{} line", label(&n.ty)),
                _ => "line not on the conversation's latest branch".into(),
            };
            report.unused(reason);
        }
    }
}

/// A line type as shown in the report.
pub(crate) fn label(ty: &str) -> &str {
    if ty.is_empty() {
        "no type"
    } else {
        ty
    }
}

/// Pass-1 reading of content arrays: only the block types and tool ids, skipping the rest
/// (however large) without copying it.
mod ids {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Default)]
    pub struct BlockIds {
        pub ty: Option<String>,
        pub id: Option<String>,
        pub tool_use_id: Option<String>,
    }

    pub fn content_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<BlockIds>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<BlockIds>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("message content")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<Lax>()? {
                    out.extend(item.0);
                }
                Ok(out)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Vec::new())
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Vec::new())
            }
        }
        d.deserialize_any(V)
    }

    /// A block's ids, or nothing when it is not an object.
    struct Lax(Option<BlockIds>);

    impl<'de> Deserialize<'de> for Lax {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Lax, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Lax;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a content block")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lax, A::Error> {
                    let mut ids = BlockIds::default();
                    while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                        let slot = match key.as_ref() {
                            "type" => &mut ids.ty,
                            "id" => &mut ids.id,
                            "tool_use_id" => &mut ids.tool_use_id,
                            _ => {
                                map.next_value::<IgnoredAny>()?;
                                continue;
                            }
                        };
                        if let Value::String(s) = map.next_value::<Value>()? {
                            *slot = Some(s);
                        }
                    }
                    Ok(Lax(Some(ids)))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lax, A::Error> {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    Ok(Lax(None))
                }
                fn visit_str<E>(self, _: &str) -> Result<Lax, E> {
                    Ok(Lax(None))
                }
                fn visit_unit<E>(self) -> Result<Lax, E> {
                    Ok(Lax(None))
                }
                fn visit_bool<E>(self, _: bool) -> Result<Lax, E> {
                    Ok(Lax(None))
                }
                fn visit_i64<E>(self, _: i64) -> Result<Lax, E> {
                    Ok(Lax(None))
                }
                fn visit_u64<E>(self, _: u64) -> Result<Lax, E> {
                    Ok(Lax(None))
                }
                fn visit_f64<E>(self, _: f64) -> Result<Lax, E> {
                    Ok(Lax(None))
                }
            }
            d.deserialize_any(V)
        }
    }
}
