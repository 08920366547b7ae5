use strum::IntoEnumIterator;

use super::*;

#[test]
fn events_serialize_flat_with_their_submission() {
    let msg = EventMsg { id: SubmissionId(3), event: Event::TextDelta { text: "hi".into() } };
    let json = serde_json::to_string(&msg).unwrap();
    assert_eq!(json, r#"{"id":3,"type":"text_delta","text":"hi"}"#);
    let back: EventMsg = serde_json::from_str(&json).unwrap();
    assert_eq!(back, msg);
}

#[test]
fn ops_are_tagged() {
    let op = Op::Approve { call_id: "c".into(), scope: ApprovalScope::Prefix };
    let json = serde_json::to_string(&op).unwrap();
    assert_eq!(json, r#"{"type":"approve","call_id":"c","scope":"prefix"}"#);
    // A denial without a reason reads as it always did.
    let deny: Op = serde_json::from_str(r#"{"type":"deny","call_id":"c"}"#).unwrap();
    assert_eq!(deny, Op::Deny { call_id: "c".into(), reason: None });
    assert_eq!(serde_json::from_str::<Op>(r#"{"type":"interrupt"}"#).unwrap(), Op::Interrupt);
}

/// Kinds, triggers and paths are enums across the seam and the same strings in JSON.
#[test]
fn typed_fields_serialize_as_their_short_names() {
    let error = Event::Error { kind: ErrorKind::ContextOverflow, message: "m".into() };
    assert_eq!(
        serde_json::to_string(&error).unwrap(),
        r#"{"type":"error","kind":"context_overflow","message":"m"}"#
    );
    let started = Event::CompactionStarted { trigger: CompactionTrigger::Reactive };
    assert_eq!(
        serde_json::to_string(&started).unwrap(),
        r#"{"type":"compaction_started","trigger":"reactive"}"#
    );
    assert_eq!(serde_json::to_string(&CompactionKind::PruneOnly).unwrap(), r#""prune-only""#);
    // `as_str` is the serialized name, for every variant.
    for kind in ErrorKind::iter() {
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        assert_eq!(serde_json::from_value::<ErrorKind>(kind.as_str().into()).unwrap(), kind);
    }
    for trigger in CompactionTrigger::iter() {
        assert_eq!(serde_json::to_value(trigger).unwrap(), trigger.as_str());
    }
    for kind in CompactionKind::iter() {
        assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
    }
}
