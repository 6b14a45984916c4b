//! The live cells: a message streams into its cell and moves to `finished` as it becomes
//! final, block by block and a code block line by line, so nothing that only grows is
//! redrawn; tools and agents stay live until they end, notes go aside of a streaming message.
//!
//! Events tagged with an agent (a layer before the last, a worker, a subagent) go to that agent's
//! `Cell::Agent`, a live cell with its status and last activity, collapsed by default; Ctrl-O shows
//! each agent's activity and final text, and tools' whole output (the last call whose output went
//! cut to scrollback is shown again whole). The answering agent streams as the reply.

use stepper_protocol::event::ToolCallStatus;

use super::App;
use crate::markdown::{self, OpenFence};
use crate::transcript::{AgentCell, Cell, ToolCell, ToolDone};

impl App {
    pub(super) fn live_agent(&mut self, id: &str) -> Option<&mut AgentCell> {
        self.live.iter_mut().find_map(|c| match c {
            Cell::Agent(a) if a.id == id && a.done.is_none() => Some(a),
            _ => None,
        })
    }

    /// Ctrl-O: show tools' whole output and agents' activity and final text, or only their
    /// tail. What went to scrollback stays as it was written, but the last tool call whose
    /// output was cut there is shown again, whole.
    pub(crate) fn toggle_expanded(&mut self) {
        self.expanded = !self.expanded;
        for cell in &mut self.live {
            match cell {
                Cell::Agent(a) => a.expanded = self.expanded,
                Cell::Tool(t) => t.expanded = self.expanded,
                _ => {}
            }
        }
        if self.expanded
            && let Some(mut tool) = self.last_tool.take()
        {
            tool.expanded = true;
            self.push(Cell::Tool(tool));
        }
        let state = if self.expanded {
            "expanded"
        } else {
            "collapsed"
        };
        self.flash = Some((
            format!("tool output and agents {state} (Ctrl-O)"),
            self.now_ms + 3000,
        ));
    }

    pub(super) fn live_tool(&mut self, call_id: &str) -> Option<&mut ToolCell> {
        self.live.iter_mut().find_map(|c| match c {
            Cell::Tool(t) if t.call_id == call_id && t.done.is_none() => Some(t),
            _ => None,
        })
    }

    /// A note beside the turn's flow (presence, model, mode, steering, notices): it goes
    /// before a message still streaming, so the message stays one cell and its markdown
    /// whole (a code block cut in two would lose its highlighting and fences). While a code
    /// block of the message streams its rows are already in scrollback, so the note waits
    /// after the message instead of landing in the middle of the code.
    pub(super) fn push_aside(&mut self, cell: Cell) {
        let at = match self.live.last() {
            Some(Cell::Assistant {
                streaming: true,
                fence: None,
                ..
            }) => self.live.len() - 1,
            _ => self.live.len(),
        };
        self.live.insert(at, cell);
        self.settle();
    }

    /// The text of the message still streaming: the last live cell, notes after it aside.
    pub(super) fn streaming_message(&mut self) -> Option<&mut String> {
        let i = self
            .live
            .iter()
            .rposition(|c| !matches!(c, Cell::Note { .. }))?;
        match &mut self.live[i] {
            Cell::Assistant {
                text,
                streaming: true,
                ..
            } => Some(text),
            _ => None,
        }
    }

    pub(super) fn end_reasoning(&mut self) {
        for cell in &mut self.live {
            if let Cell::Reasoning { done, .. } = cell {
                *done = true;
            }
        }
    }

    pub(super) fn end_message(&mut self) {
        for cell in &mut self.live {
            if let Cell::Assistant {
                text,
                streaming,
                fence,
            } = cell
            {
                *streaming = false;
                if let Some(fence) = fence.take() {
                    *cell = end_fence(*fence, std::mem::take(text));
                }
            }
        }
        self.live.retain(|c| match c {
            Cell::Assistant { text, .. } => !text.is_empty(),
            Cell::Code { rows, .. } => !rows.is_empty(),
            _ => true,
        });
    }

    /// Ends everything still live (the turn is over): a tool without a result was cut off.
    pub(super) fn finish_live(&mut self, turn_over: bool) {
        self.end_reasoning();
        self.end_message();
        if turn_over {
            for cell in &mut self.live {
                if let Cell::Tool(t) = cell
                    && t.done.is_none()
                {
                    t.done = Some(ToolDone {
                        status: ToolCallStatus::Cancelled,
                        output: std::mem::take(&mut t.output),
                        exit_code: None,
                        duration_ms: 0,
                        diff: None,
                    });
                }
            }
        }
        self.settle();
    }

    /// Moves the finished cells at the front of the live list to `finished`, and what of a
    /// streaming message at the front is final with them.
    pub(super) fn settle(&mut self) {
        while let Some(first) = self.live.first_mut() {
            if let Cell::Assistant {
                text,
                streaming: true,
                fence,
            } = first
            {
                settle_message(text, fence, &mut self.finished);
                break;
            }
            if first.is_live() {
                break;
            }
            let cell = self.live.remove(0);
            if let Cell::Tool(t) = &cell {
                self.last_tool = (!t.expanded && t.cut()).then(|| t.clone());
            }
            self.finished.push(cell);
        }
    }
}

/// Moves what of a streaming message is final to `finished`: the blocks before a blank line,
/// the text before a code fence at the top level, then that code block's lines one by one
/// as they complete, so no frame redraws (or re-highlights) a block that only grows.
fn settle_message(text: &mut String, fence: &mut Option<Box<OpenFence>>, finished: &mut Vec<Cell>) {
    loop {
        match fence {
            None => {
                if let Some((start, end)) = markdown::open_fence(text) {
                    let open = OpenFence::new(&text[start..end]);
                    let before: String = text.drain(..end).take(start).collect();
                    commit_markdown(before, finished);
                    *fence = Some(Box::new(open));
                    continue;
                }
                let stable = markdown::stable_len(text);
                if stable > 0 {
                    let rest = text.split_off(stable);
                    commit_markdown(std::mem::replace(text, rest), finished);
                }
                return;
            }
            Some(open) => {
                let mut used = 0;
                let mut rows = Vec::new();
                let mut closed = false;
                for line in text.split_inclusive('\n') {
                    if !line.ends_with('\n') {
                        break;
                    }
                    used += line.len();
                    if open.closes(line) {
                        closed = true;
                        break;
                    }
                    rows.push(open.row(line));
                }
                text.drain(..used);
                if !rows.is_empty() {
                    finished.push(Cell::Code {
                        rows,
                        joined: open.started,
                    });
                    open.started = true;
                }
                if !closed {
                    return;
                }
                *fence = None;
            }
        }
    }
}

fn commit_markdown(text: String, finished: &mut Vec<Cell>) {
    if !text.trim().is_empty() {
        finished.push(Cell::Assistant {
            text,
            streaming: false,
            fence: None,
        });
    }
}

/// A message ended inside a code block: its last line, unless that closes the block. Text
/// past several lines (the message was never settled) renders as the block it is.
fn end_fence(fence: OpenFence, text: String) -> Cell {
    if text.contains('\n') {
        return Cell::Assistant {
            text: format!("{}{text}", fence.opener),
            streaming: false,
            fence: None,
        };
    }
    let mut fence = fence;
    let rows = if text.is_empty() || fence.closes(&text) {
        Vec::new()
    } else {
        vec![fence.row(&text)]
    };
    Cell::Code {
        rows,
        joined: fence.started,
    }
}
