use super::*;

fn at(source: &str, width: usize) -> Vec<String> {
    plain(&render_at(source, width))
}

#[test]
fn renders_the_common_constructs() {
    let src = "# Title\n\nSome *text* with `code`.\n\n- one\n- two\n\n1. first\n2. second\n\n```\nfn main() {}\n```\n\n> quoted\n\n[link](http://x)";
    assert_eq!(
        at(src, 80),
        [
            "# Title",
            "",
            "Some text with code.",
            "",
            "• one",
            "• two",
            "",
            "1. first",
            "2. second",
            "",
            "fn main() {}",
            "",
            "│ quoted",
            "",
            "link (http://x)",
        ]
    );
}

#[test]
fn wrapped_list_lines_keep_the_item_indent() {
    let lines = at(
        "- a list item long enough to wrap twice at this width\n  - nested item that wraps too",
        24,
    );
    assert_eq!(
        lines,
        [
            "• a list item long ",
            "  enough to wrap twice ",
            "  at this width",
            "  • nested item that ",
            "    wraps too",
        ]
    );
}

#[test]
fn code_is_never_wrapped_and_a_cut_line_is_marked() {
    let src = "```\nlet a_very_long_line = compute(with, many, arguments);\n    indented();\n```";
    let lines = at(src, 20);
    assert_eq!(lines, ["let a_very_long_lin›", "    indented();"]);
    let blocks = code_blocks("text\n```rust\nfn a() {}\n```\nand\n```\nb\n```");
    assert_eq!(
        blocks,
        [
            CodeBlock { lang: "rust".into(), code: "fn a() {}\n".into() },
            CodeBlock { lang: String::new(), code: "b\n".into() },
        ]
    );
}

#[test]
fn tables_are_aligned_with_a_rule_under_the_header() {
    let src = "| name | size |\n|:-----|-----:|\n| a.rs | 10 |\n| main.rs | 1200 |";
    assert_eq!(
        at(src, 80),
        ["name    │ size", "────────┼─────", "a.rs    │   10", "main.rs │ 1200"]
    );
    // Wider than the screen: cut and marked, never wrapped.
    assert_eq!(at(src, 10)[0], "name    │›");
}

#[test]
fn unfinished_markdown_keeps_its_text() {
    let joined = at("Here is ```rust\nlet x = **bold", 80).join("\n");
    assert!(joined.contains("let x = "), "{joined}");
    assert!(joined.contains("bold"), "{joined}");
}

#[test]
fn no_line_is_wider_than_the_width() {
    let src = "# A heading that is long\n\n> a quote with several words\n\n| a | b |\n|---|---|\n| long cell text | x |\n\n```\nsome code line that is long\n```\n\n1. item with words\n   continued";
    for width in 1..40 {
        for line in render_at(src, width) {
            assert!(line.width() <= width.max(2), "{width}: {line:?}");
        }
    }
}
