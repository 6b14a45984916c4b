//! Capabilities: what a tool can do — change files (`edit`), run programs (`execute`), reach
//! the network (`network`), read files (`read`) — so that a layer's or an agent's `tools` and
//! `disallowed-tools` can say what an agent may do, not only which tools it gets: a deny list
//! that names `edit` leaves no tool that writes, whatever the model's dialect calls it.
//!
//! `edit` and `read` are tool names too. Each list reads such a name the safe way: `tools:`
//! (an allow list) grants the one tool it names, `disallowed-tools:` (a deny list) takes away
//! the whole capability. `execute` and `network` name no tool and mean the capability in
//! both. bash is `execute`; its writes belong to `edit`, so an agent left without any tool
//! that writes runs its commands read-only (the daemon's side: the read-only sandbox, or the
//! plan-mode gate where there is none).
//!
//! **An agent without a tool that writes changes no file.** A deny list's `edit` takes away every
//! tool that writes (in every dialect); an agent left without one has its edits and any way out of
//! the sandbox refused by its gate, and its commands run in the read-only sandbox or, where the
//! machine has none, only if plan mode would run them (no allow rule widens that).
//!
//! *`edit` and `read` in a tool list are read the safe way for that list*: in `tools` the one tool
//! of that name, in `disallowed-tools` the whole capability. A deny list must leave no way around
//! what it names (`disallowed-tools: [Write, Edit]`, Claude Code's usual "everything but writes",
//! also takes `multi_edit`, `apply_patch` and commands' writes); an allow list grants no more than
//! it names, so `tools: [Read, Grep]` in an agent file means what it means in Claude Code.
//! `execute` and `network` name no tool, so they are the capability in both.

/// What a tool can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Change files: write, edit, multi_edit, apply_patch (and commands' writes).
    Edit,
    /// Run programs: bash (Claude Code's `Bash`, Codex's `shell`).
    Execute,
    /// Reach the network: web_fetch, and the provider's web search.
    Network,
    /// Read files: read, grep, glob, ls.
    Read,
}

/// Which list a name is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// `tools:`: what the agent may use.
    Allow,
    /// `disallowed-tools:` (and a layer's `deny:`): what it may not.
    Deny,
}

impl Capability {
    pub const ALL: [Capability; 4] = [
        Capability::Edit,
        Capability::Execute,
        Capability::Network,
        Capability::Read,
    ];

    /// Its name in a list.
    pub fn name(self) -> &'static str {
        match self {
            Capability::Edit => "edit",
            Capability::Execute => "execute",
            Capability::Network => "network",
            Capability::Read => "read",
        }
    }

    /// The capability `name` names (stepper's spelling, after [`crate::config::layers::tool_name`]).
    pub fn parse(name: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The internal tools that have it.
    pub fn tools(self) -> &'static [&'static str] {
        match self {
            Capability::Edit => &["edit", "write", "multi_edit", "apply_patch"],
            Capability::Execute => &["bash"],
            Capability::Network => &["web_fetch", "web_search"],
            Capability::Read => &["read", "grep", "glob", "ls"],
        }
    }

    /// Whether `name` is also the name of one of its tools (`edit`, `read`).
    fn is_a_tool(self) -> bool {
        self.tools().contains(&self.name())
    }
}

/// The tools the names of a `list` stand for (names already in stepper's spelling): a
/// capability becomes its tools — except `edit` and `read` in an allow list, which are the
/// tools of that name. Order is kept; repeats are dropped.
pub fn expand(names: &[String], list: List) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        if !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    };
    for name in names {
        match Capability::parse(name) {
            Some(c) if list == List::Deny || !c.is_a_tool() => {
                c.tools().iter().for_each(|t| push(t))
            }
            _ => push(name),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_deny_list_takes_the_whole_capability_an_allow_list_the_tool_it_names() {
        assert_eq!(
            expand(&names(&["edit"]), List::Deny),
            ["edit", "write", "multi_edit", "apply_patch"]
        );
        assert_eq!(
            expand(&names(&["edit", "read"]), List::Allow),
            ["edit", "read"]
        );
        assert_eq!(
            expand(&names(&["read", "execute", "network", "bash"]), List::Allow),
            ["read", "bash", "web_fetch", "web_search"]
        );
        assert_eq!(
            expand(&names(&["write", "read", "mcp__s__t"]), List::Deny),
            ["write", "read", "grep", "glob", "ls", "mcp__s__t"]
        );
    }

    #[test]
    fn every_capability_has_a_name_that_parses_back() {
        for c in Capability::ALL {
            assert_eq!(Capability::parse(c.name()), Some(c));
        }
        assert_eq!(Capability::parse("Edit"), None);
    }
}
