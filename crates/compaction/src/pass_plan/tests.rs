use serde_json::json;

use super::*;
use crate::message::{Message, Part, Role};

fn call(id: &str, path: &str) -> Message {
    Message::new(Role::Assistant, vec![Part::tool_use(id, "read_file", json!({"path": path}))])
}
fn result(id: &str, bytes: usize) -> Message {
    Message::new(Role::User, vec![Part::tool_result(id, "x".repeat(bytes))])
}

/// A user message, `n` big reads, a reply, then a last round of one small read.
fn view(n: usize) -> PlainView {
    let mut messages = vec![Message::user("look around")];
    for k in 0..n {
        messages.push(call(&format!("r{k}"), &format!("f{k}.rs")));
        messages.push(result(&format!("r{k}"), 4096));
    }
    messages.push(Message::assistant("seen"));
    messages.push(Message::user("now fix it"));
    messages.push(call("z", "main.rs"));
    messages.push(result("z", 10));
    let tokens = messages.iter().map(|m| if m.has_tool_result() { 20_000 } else { 10 }).collect();
    PlainView { messages, tokens, ..PlainView::default() }
}

fn inputs<'a>(plain: &'a PlainView, trigger: &'a Trigger) -> PlanInputs<'a> {
    PlanInputs {
        plain,
        trigger,
        mode: PassMode::Full,
        folded: false,
        pressure: 130_000,
        threshold: 125_000,
        usable_input: 150_000,
        window: 200_000,
        calibration: 1.0,
        retained_user_tokens: None,
        room: None,
    }
}

#[test]
fn an_auto_pass_tries_the_prune_first_when_it_reaches_the_target() {
    let plain = view(5);
    let plan = plan(&inputs(&plain, &Trigger::Auto));
    let pruned = plan.prune_first.expect("pruning alone gets below 80 % of the threshold");
    assert!(!pruned.is_empty());
    assert_eq!(plan.bound_pruned, pruned, "the bound path starts from what the prune found");
    assert!(plan.summary.is_ok(), "the summary path is planned too: {:?}", plan.summary);
}

#[test]
fn a_prune_that_falls_short_is_not_tried_alone_but_the_bound_path_keeps_it() {
    let plain = view(5);
    let plan = plan(&PlanInputs { pressure: 400_000, ..inputs(&plain, &Trigger::Auto) });
    assert_eq!(plan.prune_first, None);
    assert!(!plan.bound_pruned.is_empty(), "what the prune found still shortens a bound record");
}

#[test]
fn a_manual_pass_never_prunes_and_covers_all_but_the_protected_part() {
    let plain = view(5);
    let plan = plan(&inputs(&plain, &Trigger::Manual));
    assert_eq!(plan.prune_first, None);
    assert!(plan.bound_pruned.is_empty());
    let cut = plan.summary.expect("a manual pass summarizes");
    assert_eq!(cut.cut, cut.protected_start, "no 25 % tail on /compact");
}

#[test]
fn a_folded_background_note_skips_the_prune() {
    let plain = view(5);
    let plan = plan(&PlanInputs { folded: true, ..inputs(&plain, &Trigger::Auto) });
    assert_eq!(plan.prune_first, None);
    assert!(plan.bound_pruned.is_empty());
}

#[test]
fn bound_only_and_too_few_messages_say_why_there_is_no_summary() {
    let plain = view(5);
    let bound = plan(&PlanInputs { mode: PassMode::BoundOnly, ..inputs(&plain, &Trigger::Auto) });
    assert_eq!(bound.summary, Err("nothing in the last round can be shortened further".to_owned()));
    assert_eq!(bound.prune_first, None, "a bound-only pass never prunes on its own");

    let small = PlainView {
        messages: vec![Message::user("hi"), Message::assistant("hello")],
        tokens: vec![10, 10],
        ..PlainView::default()
    };
    let few = plan(&inputs(&small, &Trigger::Reactive));
    assert_eq!(few.summary, Err(CutError::TooFew(2).to_string()));
}

fn send_check() -> SendCheck {
    SendCheck {
        before: 9_000,
        tail: 2_000,
        retained: 500,
        note_fixed: 400,
        note_budget: 3_000,
        prefix: 1_700,
        threshold: 9_600,
        manual: false,
        spare: None,
    }
}

#[test]
fn a_summary_worth_sending_shrinks_the_view_and_leaves_room() {
    assert_eq!(worth_sending(&send_check()), Ok(()));
}

#[test]
fn a_young_chat_is_not_worth_a_summary_request() {
    // The case: 164 tokens of chat, a note alone is bigger.
    let young = SendCheck { before: 164, tail: 60, retained: 0, manual: true, ..send_check() };
    let why = worth_sending(&young).unwrap_err();
    assert!(why.contains("would not make the conversation smaller"), "{why}");
}

#[test]
fn an_auto_pass_needs_room_for_the_note_under_the_threshold() {
    let small = SendCheck { threshold: 2_400, before: 9_000, ..send_check() };
    let why = worth_sending(&small).unwrap_err();
    assert!(why.contains("below the threshold"), "{why}");
    // A manual pass only has to shrink the view.
    assert_eq!(worth_sending(&SendCheck { manual: true, ..small }), Ok(()));
}

#[test]
fn an_auto_pass_sends_only_when_a_median_turn_still_fits() {
    // 1,700 + 400 + the shortest summary (60) + 500 + a 2,000-token tail = 4,660 of 9,600.
    assert_eq!(worth_sending(&SendCheck { spare: Some(4_940), ..send_check() }), Ok(()));
    let why = worth_sending(&SendCheck { spare: Some(4_941), ..send_check() }).unwrap_err();
    assert!(why.contains("no room for the next turn"), "{why}");
    let manual = SendCheck { spare: Some(9_000), manual: true, ..send_check() };
    assert_eq!(worth_sending(&manual), Ok(()), "a manual pass only has to shrink the view");
}

#[test]
fn the_aim_is_three_median_turns_under_the_threshold_at_most_sixty_percent() {
    assert_eq!(median_turn(&[]), 0);
    assert_eq!(median_turn(&[100, 300]), 200, "before three turns: the mean");
    assert_eq!(median_turn(&[100, 900, 300]), 300);
    assert_eq!(median_turn(&[100, 900, 300, 500]), 400);
    assert_eq!(aim(1_800, 200, 2), 1_080, "60 % alone before three turns");
    assert_eq!(aim(1_800, 200, 5), 1_080, "1,200 is more than 60 %");
    assert_eq!(aim(4_200, 1_150, 5), 750);
    assert_eq!(aim(1_000, 500, 5), 0);
}

/// A chat of `turns` turns of a 10-token question and a 90-token answer.
fn chat(turns: usize) -> PlainView {
    let mut messages = Vec::new();
    for k in 0..turns {
        messages.push(Message::user(format!("question {k}")));
        messages.push(Message::assistant(format!("answer {k}")));
    }
    let tokens = messages.iter().map(|m| if m.role == Role::User { 10 } else { 90 }).collect();
    PlainView { messages, tokens, ..PlainView::default() }
}

#[test]
fn an_auto_pass_shrinks_its_tail_toward_the_aim() {
    let plain = chat(20);
    // U = 2,000: the usual tail is 500 tokens, five turns.
    let policy = CutPolicy::new(2_000, 1.0);
    let usual = cut::plan(&plain.messages, &plain.tokens, &policy).unwrap();
    assert_eq!(usual.cut, 30);
    // Fixed part 600, aim 900: 300 are left for the tail and the retained texts.
    let room = Room { aim: 900, fixed: 600, to_come: 0 };
    let aimed = aimed_cut(&plain.messages, &plain.tokens, &policy, &room).unwrap();
    assert!(600 + aimed.tail_tokens + aimed.retained_tokens <= 900, "{aimed:?}");
    assert!(aimed.cut > usual.cut);
    // An aim below even the protected round: the smallest view (the latest turn, no retained
    // texts beyond the round's).
    let tight = Room { aim: 100, fixed: 600, to_come: 0 };
    let smallest = aimed_cut(&plain.messages, &plain.tokens, &policy, &tight).unwrap();
    assert_eq!((smallest.cut, smallest.retained.len()), (38, 0));
    // An auto pass plans with its room; a manual one keeps only the protected part anyway.
    let inputs = PlanInputs {
        room: Some(room),
        usable_input: 2_000,
        window: 2_500,
        threshold: 1_600,
        pressure: 2_100,
        ..inputs(&plain, &Trigger::Auto)
    };
    assert_eq!(plan(&inputs).summary.unwrap(), aimed);
}
