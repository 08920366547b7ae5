//! The model catalog: context window and maximum output per model, from `assets/models.toml`.
//!
//! The table is embedded at compile time and parsed once. Lookup never fails: an exact id, then the
//! id without its `vendor/` prefix and `:tag` suffix, then the longest family prefix, then a
//! conservative default marked unverified (docs/providers.md, *Model catalog*: the UI shows
//! "(unverified)"). Config overrides are the engine's business; this module only knows the
//! published figures.

use std::sync::OnceLock;

use serde::Deserialize;

const CATALOG_TOML: &str = include_str!("../../../assets/models.toml");

/// What the catalog knows about one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// The id that was looked up, as given.
    pub id: String,
    /// Total tokens the model can attend to (prompt + output).
    pub context_window: u64,
    /// Most tokens it may generate in one reply.
    pub max_output: u64,
    /// False when the figures are the catalog's default guess.
    pub verified: bool,
    /// The family the id matched, when it matched by family.
    pub family: Option<String>,
    pub matched: CatalogMatch,
}

/// How [`lookup`] found the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogMatch {
    Exact,
    Family,
    Default,
}

#[derive(Debug, Deserialize)]
struct CatalogFile {
    /// When the prices were read.
    #[serde(default)]
    prices: Prices,
    default: Limits,
    #[serde(default)]
    model: Vec<ModelEntry>,
    #[serde(default)]
    family: Vec<FamilyEntry>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct Limits {
    context_window: u64,
    max_output: u64,
}

#[derive(Debug, Default, Deserialize)]
struct Prices {
    read: String,
}

#[derive(Debug, Deserialize)]
struct ModelEntry {
    id: String,
    #[serde(flatten)]
    limits: Limits,
    #[serde(default)]
    price: Option<crate::price::Price>,
}

#[derive(Debug, Deserialize)]
struct FamilyEntry {
    name: String,
    prefixes: Vec<String>,
    #[serde(flatten)]
    limits: Limits,
}

/// Used only if the embedded table were unreadable (a test guarantees it is not).
const FALLBACK_DEFAULT: Limits = Limits { context_window: 32768, max_output: 4096 };

fn catalog() -> &'static CatalogFile {
    static CATALOG: OnceLock<CatalogFile> = OnceLock::new();
    CATALOG.get_or_init(|| match parse(CATALOG_TOML) {
        Ok(file) => file,
        Err(err) => {
            tracing::error!("the embedded model catalog is unreadable: {err}");
            CatalogFile {
                prices: Prices::default(),
                default: FALLBACK_DEFAULT,
                model: Vec::new(),
                family: Vec::new(),
            }
        }
    })
}

fn parse(text: &str) -> Result<CatalogFile, toml::de::Error> {
    let mut file: CatalogFile = toml::from_str(text)?;
    for entry in &mut file.model {
        entry.id = entry.id.to_ascii_lowercase();
    }
    for family in &mut file.family {
        for prefix in &mut family.prefixes {
            *prefix = prefix.to_ascii_lowercase();
        }
    }
    Ok(file)
}

/// Every model the catalog names, in table order, with its context window (for a picker).
pub fn models() -> Vec<(String, u64)> {
    catalog().model.iter().map(|m| (m.id.clone(), m.limits.context_window)).collect()
}

/// The figures for `model_id`. Never fails; see the module docs for the order.
pub fn lookup(model_id: &str) -> ModelInfo {
    lookup_in(catalog(), model_id)
}

/// The published price of `model_id`: an exact id, or the id without its `vendor/` prefix and
/// `:tag` suffix; never a family's or the default's.
pub fn price_of(model_id: &str) -> Option<crate::price::Price> {
    let lower = model_id.trim().to_ascii_lowercase();
    let bare = bare_id(&lower);
    let found = [lower.as_str(), bare]
        .into_iter()
        .find_map(|candidate| catalog().model.iter().find(|entry| entry.id == candidate));
    found.and_then(|entry| entry.price)
}

/// When the catalog's prices were read.
pub fn prices_read() -> &'static str {
    &catalog().prices.read
}

/// The figures used for a model the catalog does not know.
#[cfg(test)]
fn default_info(model_id: &str) -> ModelInfo {
    let limits = catalog().default;
    info(model_id, limits, false, None, CatalogMatch::Default)
}

fn lookup_in(file: &CatalogFile, model_id: &str) -> ModelInfo {
    let lower = model_id.trim().to_ascii_lowercase();
    let bare = bare_id(&lower);
    for candidate in [lower.as_str(), bare] {
        if let Some(entry) = file.model.iter().find(|entry| entry.id == candidate) {
            return info(model_id, entry.limits, true, None, CatalogMatch::Exact);
        }
    }
    let best = file
        .family
        .iter()
        .flat_map(|family| family.prefixes.iter().map(move |prefix| (family, prefix)))
        .filter(|(_, prefix)| bare.starts_with(prefix.as_str()))
        .max_by_key(|(_, prefix)| prefix.len());
    match best {
        Some((family, _)) => {
            info(model_id, family.limits, true, Some(family.name.clone()), CatalogMatch::Family)
        }
        None => info(model_id, file.default, false, None, CatalogMatch::Default),
    }
}

/// `openrouter/anthropic/claude-sonnet-4.5:beta` → `claude-sonnet-4.5`; Hugging Face ids such
/// as `meta-llama/Llama-3.3-70B-Instruct` lose their organisation the same way.
fn bare_id(lower: &str) -> &str {
    let after_vendor = lower.rsplit('/').next().unwrap_or(lower);
    after_vendor.split(':').next().unwrap_or(after_vendor)
}

fn info(
    id: &str,
    limits: Limits,
    verified: bool,
    family: Option<String>,
    matched: CatalogMatch,
) -> ModelInfo {
    ModelInfo {
        id: id.to_owned(),
        context_window: limits.context_window,
        max_output: limits.max_output,
        verified,
        family,
        matched,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_catalog_parses_and_is_sane() {
        let file = parse(CATALOG_TOML).unwrap();
        assert!(file.model.len() > 40);
        for entry in &file.model {
            assert!(entry.limits.max_output <= entry.limits.context_window, "{}", entry.id);
            assert!(entry.limits.context_window >= 8192, "{}", entry.id);
        }
        for family in &file.family {
            assert!(!family.prefixes.is_empty(), "{}", family.name);
            assert!(family.limits.max_output <= family.limits.context_window, "{}", family.name);
        }
        let mut ids: Vec<_> = file.model.iter().map(|entry| entry.id.as_str()).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(before, ids.len(), "duplicate model ids");
    }

    #[test]
    fn exact_ids_win() {
        let info = lookup("gpt-4o");
        assert_eq!((info.context_window, info.max_output), (128000, 16384));
        assert_eq!(info.matched, CatalogMatch::Exact);
        assert!(info.verified);
        assert_eq!(lookup("Claude-Sonnet-4-5").matched, CatalogMatch::Exact);
        assert_eq!(lookup("deepseek-reasoner").max_output, 65536);
    }

    #[test]
    fn vendor_prefixes_and_tags_are_stripped() {
        assert_eq!(lookup("openai/gpt-4.1").matched, CatalogMatch::Exact);
        assert_eq!(lookup("deepseek/deepseek-chat").context_window, 131072);
        let llama = lookup("meta-llama/Llama-3.3-70B-Instruct");
        assert_eq!(llama.family.as_deref(), Some("llama-3.3"));
        let ollama = lookup("qwen2.5-coder:32b");
        assert_eq!(ollama.family.as_deref(), Some("qwen2.5-coder"));
    }

    #[test]
    fn the_longest_family_prefix_wins() {
        assert_eq!(lookup("claude-opus-4-5-20251101").family.as_deref(), Some("claude-opus-4-5"));
        assert_eq!(lookup("claude-opus-4-7").family.as_deref(), Some("claude-opus-4"));
        assert_eq!(lookup("qwen3-coder:30b").family.as_deref(), Some("qwen3-coder"));
        assert_eq!(lookup("qwen3:8b").family.as_deref(), Some("qwen3"));
        assert_eq!(lookup("mixtral-8x22b-instruct").context_window, 65536);
        assert_eq!(lookup("gemini-2.5-pro-preview-06-05").max_output, 65536);
        assert_eq!(lookup("llama3.1:8b").context_window, 131072);
        assert_eq!(lookup("mistral-large-2411").family.as_deref(), Some("mistral-large"));
    }

    #[test]
    fn unknown_models_get_an_unverified_default() {
        let info = lookup("my-finetune-v7");
        assert!(!info.verified);
        assert_eq!(info.matched, CatalogMatch::Default);
        assert_eq!(info.id, "my-finetune-v7");
        assert_eq!(info, default_info("my-finetune-v7"));
    }
}
