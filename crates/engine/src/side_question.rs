//! `/btw QUESTION` (docs/commands.md, `/btw`): a side question answered from the conversation
//! as the model has it now, with the session's model, without adding anything to what the
//! model reads later.
//!
//! The request is the live one — the same system prompt, tools and view, so a provider answers
//! its prefix from the prompt cache — with the question after it and tool calls forbidden. The
//! answer is journaled as a `side` entry (docs/journal-format.md, *`side`*): on the chain, so
//! `resume` shows it where it was asked, and skipped by every view, so the next request is
//! byte for byte the request it would have been. Its cost is counted with the session's
//! replies and told with the answer.
//!
//! Invariants: nothing is journaled unless an answer came (a failure, an interrupt or a reply
//! without text write nothing and say why); a view that fails the check is not sent; a
//! question that would not fit the window is refused before anything is sent.

use codewhale_journal::{Reads, SidePayload, Usage as JUsage, View};
use codewhale_provider::{Message, Request, Response, ToolChoice};
use tokio_util::sync::CancellationToken;

use crate::convert::{self, RequestParams};
use crate::error::EngineError;
use crate::events::EventSink;
use crate::session::Session;
use codewhale_protocol::{ErrorKind, Event, SubmissionId};

/// The instruction before the question (our own words).
const INSTRUCTION: &str = include_str!("../../../assets/prompts/side-question.md");

/// The longest answer asked for, in tokens.
const MAX_ANSWER_TOKENS: u64 = 4_096;

/// Answers `question` and journals it (module docs); `cancel` stops it.
pub(crate) async fn run(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    question: String,
    cancel: CancellationToken,
) {
    if let Err((kind, message)) = answer(session, sink, id, question, cancel).await {
        sink.emit(id, Event::Error { kind, message });
    }
}

/// Why a side question was not answered: the error's kind and its one sentence.
type Failed = (ErrorKind, String);

/// The steps of a side question (module docs): the question checked, the view checked and
/// found room, the request sent, the answer journaled and then shown as journaled.
async fn answer(
    session: &mut Session,
    sink: &EventSink,
    id: SubmissionId,
    question: String,
    cancel: CancellationToken,
) -> Result<(), Failed> {
    let question = checked_question(session, question)?;
    let view = view_with_room(session, &question)?;
    let request = request_for(session, &view, &question);
    let reads = Reads::new(view.head.clone(), view.compaction.as_ref().map(|c| c.id.clone()));
    drop(view);
    let response = send(session, &request, cancel).await?;
    let text = response.text().trim().to_owned();
    if text.is_empty() {
        return Err((
            ErrorKind::Protocol,
            "the model gave no answer to the side question (it tried to call a tool instead); \
             ask it as a message if it needs tools"
                .into(),
        ));
    }
    let answered = journal(session, question, text, &response, reads).await?;
    sink.emit(id, answered);
    Ok(())
}

/// `question` trimmed, when there is one and a model to ask.
fn checked_question(session: &Session, question: String) -> Result<String, Failed> {
    let question = question.trim().to_owned();
    if question.is_empty() {
        return Err((
            ErrorKind::Config,
            "no question: type it after /btw, e.g. `/btw what does the parser return on EOF?`"
                .into(),
        ));
    }
    if let Some(why) = session.no_model() {
        return Err((ErrorKind::Config, format!("a side question needs a model: {why}")));
    }
    Ok(question)
}

/// The view the question is asked after: dangling calls answered first, the view checked, and
/// room left in the window for the question.
fn view_with_room(session: &mut Session, question: &str) -> Result<View, Failed> {
    // A call left without a result (a crash) is answered first, as a turn would.
    session.heal_dangling_calls().map_err(engine)?;
    let view = session.render();
    codewhale_journal::check_view(&view)
        .map_err(|source| engine(EngineError::View { source, hint: session.hints().rewind() }))?;
    let limits = *session.budget().limits();
    let asked = u64::from(crate::tokens::estimate(question))
        + u64::from(crate::tokens::estimate(INSTRUCTION));
    if session.budget().raw_estimate() + asked > limits.usable_input {
        return Err((
            ErrorKind::ContextFull,
            "the conversation fills the model's window, so a side question cannot be added; \
             /compact first, then ask again"
                .into(),
        ));
    }
    Ok(view)
}

/// The live request for `view` with the question after it, tool calls forbidden.
fn request_for(session: &Session, view: &View, question: &str) -> Request {
    let limits = *session.budget().limits();
    let max_output = codewhale_provider::lookup_model(session.model())
        .max_output
        .min(limits.reserved_output)
        .clamp(1, MAX_ANSWER_TOKENS);
    let blobs = session.blob_dir();
    let images = if session.images_refused() {
        convert::Images::Refused
    } else {
        convert::Images::Send(&blobs)
    };
    let mut request = convert::to_request(
        view,
        RequestParams {
            model: session.model(),
            system: session.system_prompt(),
            tools: session.tool_specs(),
            max_output_tokens: u32::try_from(max_output).unwrap_or(u32::MAX),
            images,
        },
    );
    // The conversation is the live request's prefix: cached up to its end.
    if let Some(last) = request.messages.last_mut() {
        last.cache_breakpoint = true;
    }
    request.messages.push(Message::user_text(format!("{}\n{question}", INSTRUCTION.trim_end())));
    request.tool_choice = ToolChoice::None;
    request
}

/// Sends the side question; an interrupt or a failure is said in one sentence.
async fn send(
    session: &Session,
    request: &Request,
    cancel: CancellationToken,
) -> Result<Response, Failed> {
    session.client().complete(request, cancel).await.map_err(|failure| {
        if failure.error.kind == codewhale_provider::ErrorKind::Cancelled {
            (ErrorKind::Cancelled, "the side question was interrupted; nothing was kept".into())
        } else {
            (
                crate::error::provider_kind(&failure.error.kind),
                format!("the side question failed: {}", failure.error),
            )
        }
    })
}

/// Journals the answer as a `side` entry with its cost counted, syncs it, and returns the
/// event that shows it — what was journaled (redacted) is what is shown.
async fn journal(
    session: &mut Session,
    question: String,
    text: String,
    response: &Response,
    reads: Reads,
) -> Result<Event, Failed> {
    let model = response.model.clone().unwrap_or_else(|| session.model().to_owned());
    let price = session.price();
    let usage = response.usage;
    if let Some(u) = &usage {
        session.spend().replies.add(u, price.as_ref());
    }
    let cost_usd = usage.as_ref().and_then(|u| price.map(|p| p.cost_usd(u)));
    let mut payload =
        SidePayload { question: question.clone(), answer: text, ..Default::default() };
    payload.model = Some(model.clone());
    payload.usage = usage.map(|u| JUsage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_tokens: u.cache_read_tokens,
        cache_write_tokens: u.cache_write_tokens,
        cost_usd,
        ..JUsage::default()
    });
    payload.reads = Some(reads);
    let entry = session.append(payload).map_err(engine)?;
    session.sync().await.map_err(engine)?;
    // What was journaled (redacted) is what is shown.
    let (question, answer) = match session.journal().get(entry.as_str()).map(|e| &e.payload) {
        Some(codewhale_journal::Payload::Side(s)) => (s.question.clone(), s.answer.clone()),
        _ => (question, String::new()),
    };
    Ok(Event::SideAnswer {
        question,
        answer,
        model,
        input_tokens: usage.map_or(0, |u| u.input_tokens),
        output_tokens: usage.map_or(0, |u| u.output_tokens),
        cost_usd,
    })
}

/// An engine error as a side question's failure.
fn engine(e: EngineError) -> Failed {
    (e.kind(), e.to_string())
}
