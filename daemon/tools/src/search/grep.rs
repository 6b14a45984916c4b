//! The `grep` tool: a regex search over a tree with ripgrep's walker, matcher and searcher, in
//! ripgrep's output shapes (matching files, matching lines with context, counts).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::SystemTime;

use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde::Deserialize;
use stepper_engine::tool::{Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args};
use tokio_util::sync::CancellationToken;

use super::{
    Capped, MAX_OUTPUT_BYTES, SearchError, Shown, entry_limit, gated_root, plural, walker,
};

/// Most files with matches collected before the walk stops.
const MAX_MATCHED_FILES: usize = 100_000;

/// Most bytes of matching lines collected before the walk stops: bounds memory when a pattern
/// matches nearly everything, where the output would be cut long before anyway.
const MAX_STORED_BYTES: usize = 16 << 20;

/// Longest line shown, in characters: a minified file's one line must not fill the output.
const MAX_LINE_CHARS: usize = 500;

/// The `grep` tool.
pub struct GrepTool;

/// What a search reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Paths of files with a match, newest first.
    #[default]
    FilesWithMatches,
    /// Matching lines, with context lines if asked.
    Content,
    /// How many lines match in each file.
    Count,
}

/// A search: the pattern and what to search and report. `GrepOptions::new(pattern)` gives
/// ripgrep's defaults in `files_with_matches` mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepOptions {
    /// A regex in Rust's (ripgrep's) syntax.
    pub pattern: String,
    /// Globs a file must match, separated by whitespace, as ripgrep's `--glob` (`!` excludes).
    pub glob: Option<String>,
    /// A ripgrep file type (`rust`, `py`, `js`...).
    pub file_type: Option<String>,
    pub mode: OutputMode,
    pub case_insensitive: bool,
    /// Line numbers on content lines.
    pub line_numbers: bool,
    /// Context lines before and after each match, in content mode.
    pub before: usize,
    pub after: usize,
    /// Let the pattern span lines, with `.` matching a newline.
    pub multiline: bool,
    /// Most lines kept per file in content mode; the search of a file stops there.
    pub max_lines_per_file: usize,
}

impl GrepOptions {
    pub fn new(pattern: impl Into<String>) -> GrepOptions {
        GrepOptions {
            pattern: pattern.into(),
            glob: None,
            file_type: None,
            mode: OutputMode::FilesWithMatches,
            case_insensitive: false,
            line_numbers: true,
            before: 0,
            after: 0,
            multiline: false,
            max_lines_per_file: usize::MAX,
        }
    }

    fn matcher(&self) -> Result<RegexMatcher, SearchError> {
        let mut builder = RegexMatcherBuilder::new();
        // `^` and `$` match at line ends, as in ripgrep.
        builder
            .case_insensitive(self.case_insensitive)
            .multi_line(true);
        if self.multiline {
            builder.dot_matches_new_line(true);
        } else {
            // A match never spans lines, which lets the searcher work line by line.
            builder.line_terminator(Some(b'\n'));
        }
        builder.build(&self.pattern).map_err(|e| {
            let hint = match e.kind() {
                grep_regex::ErrorKind::NotAllowed(_) => {
                    " (to match across lines, set `multiline: true`)"
                }
                _ => "",
            };
            SearchError::InvalidRegex(format!("`{}`: {e}{hint}", self.pattern))
        })
    }

    fn globs(&self) -> impl Iterator<Item = &str> {
        self.glob.iter().flat_map(|g| g.split_whitespace())
    }

    /// Whether the search can run at all: a pattern that compiles, globs that parse, a known
    /// type. Checked before asking permission, so a bad call never prompts anyone.
    fn check(&self) -> Result<(), SearchError> {
        self.matcher()?;
        for glob in self.globs() {
            globset::Glob::new(glob.strip_prefix('!').unwrap_or(glob)).map_err(|e| {
                SearchError::InvalidGlob {
                    glob: glob.to_string(),
                    reason: e.kind().to_string(),
                }
            })?;
        }
        self.types()?;
        Ok(())
    }

    fn types(&self) -> Result<Option<ignore::types::Types>, SearchError> {
        let Some(name) = &self.file_type else {
            return Ok(None);
        };
        let mut builder = TypesBuilder::new();
        builder.add_defaults().select(name);
        builder
            .build()
            .map(Some)
            .map_err(|_| SearchError::UnknownType(name.clone()))
    }

    fn searcher(&self) -> SearcherBuilder {
        let content = self.mode == OutputMode::Content;
        let mut builder = SearcherBuilder::new();
        builder
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(content && self.line_numbers)
            .multi_line(self.multiline)
            .before_context(if content { self.before } else { 0 })
            .after_context(if content { self.after } else { 0 });
        builder
    }
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepReport {
    /// Files with a match: newest first in `files_with_matches` mode, else by path.
    pub files: Vec<FileMatches>,
    /// The walk stopped at its collection bound, so `files` is only part of the matches.
    pub partial: bool,
}

/// One file's matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMatches {
    /// Relative to the search root; empty when the root is this file.
    pub path: PathBuf,
    /// When the file last changed (`files_with_matches` mode only).
    pub modified: Option<SystemTime>,
    /// Matching lines: all of them in `count` mode, at least one otherwise.
    pub count: u64,
    /// Matches and context in content mode, in file order.
    pub lines: Vec<Line>,
}

/// A line of content-mode output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Match {
        number: Option<u64>,
        text: String,
    },
    Context {
        number: Option<u64>,
        text: String,
    },
    /// A gap between groups of context.
    Break,
}

/// Searches the files under `root` (or the file `root`) in parallel, skipping binary files,
/// what git ignores and VCS folders. Stops early with `SearchError::Cancelled` once `cancel`
/// is cancelled.
pub fn grep_files(
    root: &Path,
    options: &GrepOptions,
    cancel: &CancellationToken,
) -> Result<GrepReport, SearchError> {
    let matcher = options.matcher()?;
    let mut walk = walker(root);
    if let Some(types) = options.types()? {
        walk.types(types);
    }
    if options.glob.is_some() {
        let mut overrides = OverrideBuilder::new(root);
        for glob in options.globs() {
            overrides.add(glob).map_err(|e| invalid_glob(glob, &e))?;
        }
        walk.overrides(overrides.build().map_err(|e| invalid_glob("", &e))?);
    }
    let searcher = options.searcher();

    let found: Mutex<Vec<FileMatches>> = Mutex::new(Vec::new());
    let stored = AtomicUsize::new(0);
    let partial = AtomicBool::new(false);
    walk.build_parallel().run(|| {
        let mut searcher = searcher.build();
        let matcher = matcher.clone();
        let (found, stored, partial) = (&found, &stored, &partial);
        Box::new(move |entry| {
            if cancel.is_cancelled() || partial.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut sink = FileSink::new(options, cancel);
            if let Err(error) = searcher.search_path(&matcher, entry.path(), &mut sink) {
                tracing::debug!(path = %entry.path().display(), %error, "grep skipped a file");
                return WalkState::Continue;
            }
            if sink.binary || sink.count == 0 {
                return WalkState::Continue;
            }
            let modified = (options.mode == OutputMode::FilesWithMatches)
                .then(|| entry.metadata().ok()?.modified().ok())
                .flatten();
            let path = entry
                .path()
                .strip_prefix(root)
                .unwrap_or(entry.path())
                .to_path_buf();
            let bytes = stored.fetch_add(sink.bytes + path.as_os_str().len(), Ordering::Relaxed);
            let mut found = found
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            found.push(FileMatches {
                path,
                modified,
                count: sink.count,
                lines: sink.lines,
            });
            if found.len() >= MAX_MATCHED_FILES || bytes >= MAX_STORED_BYTES {
                partial.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(SearchError::Cancelled);
    }

    let mut files = found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if options.mode == OutputMode::FilesWithMatches {
        files.sort_by(|a, b| {
            b.modified
                .cmp(&a.modified)
                .then_with(|| a.path.cmp(&b.path))
        });
    } else {
        files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    Ok(GrepReport {
        files,
        partial: partial.into_inner(),
    })
}

fn invalid_glob(glob: &str, error: &ignore::Error) -> SearchError {
    SearchError::InvalidGlob {
        glob: glob.to_string(),
        reason: error.to_string(),
    }
}

/// Gathers one file's matches; stops the file's search as soon as the mode has what it needs.
struct FileSink<'a> {
    options: &'a GrepOptions,
    cancel: &'a CancellationToken,
    count: u64,
    lines: Vec<Line>,
    bytes: usize,
    binary: bool,
}

impl<'a> FileSink<'a> {
    fn new(options: &'a GrepOptions, cancel: &'a CancellationToken) -> FileSink<'a> {
        FileSink {
            options,
            cancel,
            count: 0,
            lines: Vec::new(),
            bytes: 0,
            binary: false,
        }
    }

    /// Keeps a line; false once the file has given all the lines it may.
    fn keep(&mut self, line: Line) -> bool {
        if let Line::Match { text, .. } | Line::Context { text, .. } = &line {
            self.bytes += text.len();
        }
        self.lines.push(line);
        self.lines.len() < self.options.max_lines_per_file
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        match self.options.mode {
            OutputMode::FilesWithMatches => {
                self.count += 1;
                Ok(false)
            }
            OutputMode::Count => {
                self.count += found.lines().count() as u64;
                Ok(true)
            }
            OutputMode::Content => {
                let first = found.line_number();
                for (i, line) in found.lines().enumerate() {
                    self.count += 1;
                    let number = first.map(|n| n + i as u64);
                    if !self.keep(Line::Match {
                        number,
                        text: line_text(line),
                    }) {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        let line = Line::Context {
            number: context.line_number(),
            text: line_text(context.bytes()),
        };
        Ok(self.keep(line))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, std::io::Error> {
        Ok(self.keep(Line::Break))
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line as text: its terminator dropped, invalid UTF-8 replaced, a very long line cut.
fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= MAX_LINE_CHARS {
        return text.into_owned();
    }
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => format!(
            "{} [… line cut at {MAX_LINE_CHARS} characters]",
            &text[..end]
        ),
        None => text.into_owned(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default, rename = "type")]
    file_type: Option<String>,
    #[serde(default)]
    output_mode: Option<OutputMode>,
    #[serde(default, alias = "-i")]
    case_insensitive: Option<bool>,
    #[serde(default, alias = "-n")]
    line_numbers: Option<bool>,
    #[serde(default, alias = "-A")]
    after: Option<usize>,
    #[serde(default, alias = "-B")]
    before: Option<usize>,
    #[serde(default, alias = "-C")]
    context: Option<usize>,
    #[serde(default)]
    multiline: Option<bool>,
    #[serde(default)]
    head_limit: Option<usize>,
}

impl GrepArgs {
    fn options(&self) -> GrepOptions {
        let limit = entry_limit(self.head_limit);
        GrepOptions {
            pattern: self.pattern.clone(),
            glob: self.glob.clone().filter(|g| !g.trim().is_empty()),
            file_type: self.file_type.clone().filter(|t| !t.trim().is_empty()),
            mode: self.output_mode.unwrap_or_default(),
            case_insensitive: self.case_insensitive.unwrap_or(false),
            line_numbers: self.line_numbers.unwrap_or(true),
            // `-A` and `-B` win over `-C`, as in ripgrep.
            before: self.before.or(self.context).unwrap_or(0),
            after: self.after.or(self.context).unwrap_or(0),
            multiline: self.multiline.unwrap_or(false),
            // One more than can be shown, so a file that fills the output still cuts it.
            max_lines_per_file: limit.unwrap_or(MAX_OUTPUT_BYTES).saturating_add(1),
        }
    }
}

impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: "A powerful search tool built on ripgrep.\n\
                - ALWAYS use grep for search tasks; never run `grep` or `rg` through bash\n\
                - Supports full regex syntax (e.g. \"log.*Error\", \"fn\\s+\\w+\")\n\
                - Filter files with `glob` (e.g. \"*.js\", \"**/*.tsx\") or `type` (e.g. \"js\", \
                \"py\", \"rust\")\n\
                - Output modes: \"files_with_matches\" shows file paths, newest first (default); \
                \"content\" shows matching lines; \"count\" shows matching-line counts per file\n\
                - Pattern syntax is ripgrep's (not grep's): literal braces need escaping \
                (use `interface\\{\\}` to find `interface{}` in Go code)\n\
                - Patterns match within single lines; for patterns across lines such as \
                `struct \\{[\\s\\S]*?field`, set `multiline: true`\n\
                - Respects .gitignore, .ignore and git excludes, skips .git and binary files\n\
                - Long output is cut with a notice; narrow the search with `path`, `glob` or \
                `head_limit`"
                .into(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "The regular expression to search for in file contents"
                    },
                    "path": {
                        "type": "string",
                        "description": "File or directory to search in. Defaults to the current \
                            working directory."
                    },
                    "glob": {
                        "type": "string",
                        "description": "Glob to filter files (e.g. \"*.js\", \"*.{ts,tsx}\"), as \
                            rg --glob; several may be separated by spaces, `!` excludes"
                    },
                    "type": {
                        "type": "string",
                        "description": "File type to search, as rg --type (e.g. \"js\", \"py\", \
                            \"rust\", \"go\"); more efficient than `glob` for standard types"
                    },
                    "output_mode": {
                        "type": "string",
                        "enum": ["files_with_matches", "content", "count"],
                        "description": "\"content\" shows matching lines (supports context and \
                            line numbers), \"files_with_matches\" shows file paths (default), \
                            \"count\" shows match counts"
                    },
                    "case_insensitive": {
                        "type": "boolean",
                        "description": "Case-insensitive search (rg -i); \"-i\" is accepted too"
                    },
                    "line_numbers": {
                        "type": "boolean",
                        "description": "Show line numbers (rg -n), content mode only; default \
                            true; \"-n\" is accepted too"
                    },
                    "after": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Lines to show after each match (rg -A), content mode \
                            only; \"-A\" is accepted too"
                    },
                    "before": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Lines to show before each match (rg -B), content mode \
                            only; \"-B\" is accepted too"
                    },
                    "context": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Lines to show before and after each match (rg -C), \
                            content mode only; \"-C\" is accepted too"
                    },
                    "multiline": {
                        "type": "boolean",
                        "description": "Let patterns span lines, with `.` matching newlines \
                            (rg -U --multiline-dotall). Default false."
                    },
                    "head_limit": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Show only the first N lines (content) or entries \
                            (files, counts), like `| head -N`. Default 1000; 0 keeps only the \
                            size cap."
                    }
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: GrepArgs = parse_args(args)?;
            let options = args.options();
            options.check()?;
            let path = args.path.as_deref().unwrap_or(".");
            let root = gated_root(cx, cx.resolve(path)).await?;

            let cancel = cx.cancel.clone();
            let search = options.clone();
            let report = tokio::task::spawn_blocking(move || grep_files(&root, &search, &cancel))
                .await
                .map_err(|e| ToolError::Failed(format!("the grep search failed: {e}")))??;
            let limit = entry_limit(args.head_limit);
            Ok(ToolOutput::text(render(
                &report,
                &options,
                limit,
                &Shown::new(Path::new(path)),
            )))
        })
    }
}

fn render(
    report: &GrepReport,
    options: &GrepOptions,
    limit: Option<usize>,
    shown: &Shown,
) -> String {
    if report.files.is_empty() {
        return "No matches found".into();
    }
    let total = report.files.len();
    let mut out = Capped::new(limit);
    match options.mode {
        OutputMode::FilesWithMatches => {
            for file in &report.files {
                if !out.push(&shown.path(&file.path)) {
                    break;
                }
            }
        }
        OutputMode::Count => {
            for file in &report.files {
                if !out.push(&format!("{}:{}", shown.path(&file.path), file.count)) {
                    break;
                }
            }
        }
        OutputMode::Content => {
            let context = options.before > 0 || options.after > 0;
            'files: for (i, file) in report.files.iter().enumerate() {
                let name = shown.path(&file.path);
                if context && i > 0 && !out.push("--") {
                    break;
                }
                for line in &file.lines {
                    let text = match line {
                        Line::Match { number, text } => content_line(&name, ':', *number, text),
                        Line::Context { number, text } => content_line(&name, '-', *number, text),
                        Line::Break => "--".into(),
                    };
                    if !out.push(&text) {
                        break 'files;
                    }
                }
            }
        }
    }

    let (cut, entries) = (out.cut, out.entries);
    let mut text = String::new();
    if options.mode == OutputMode::FilesWithMatches {
        text.push_str(&format!("Found {}\n", plural(total, "file", "files")));
    }
    text.push_str(&out.finish());
    if options.mode == OutputMode::Count {
        let lines: u64 = report.files.iter().map(|f| f.count).sum();
        let lines = if lines == 1 {
            "1 matching line".into()
        } else {
            format!("{lines} matching lines")
        };
        text.push_str(&format!(
            "\n\nFound {lines} in {}",
            plural(total, "file", "files")
        ));
    }
    if cut {
        let shown = match options.mode {
            OutputMode::FilesWithMatches => {
                format!("Showing the {entries} most recently modified of {total} files")
            }
            OutputMode::Count => format!("Showing {entries} of {total} files"),
            OutputMode::Content => format!("Output cut after {entries} lines; more lines matched"),
        };
        text.push_str(&format!(
            "\n\n({shown}. Use a more specific pattern, `path` or `glob` to see the rest.)"
        ));
    }
    if report.partial {
        text.push_str(PARTIAL);
    }
    text
}

const PARTIAL: &str = "\n\n(The search stopped early after collecting too many matches, so \
                       these results are incomplete. Narrow the search.)";

fn content_line(name: &str, separator: char, number: Option<u64>, text: &str) -> String {
    match number {
        Some(n) => format!("{name}{separator}{n}{separator}{text}"),
        None => format!("{name}{separator}{text}"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use stepper_engine::tool::GateRequest;

    use super::super::tests::{DenyingGate, touch, write_tree};
    use super::*;

    async fn grep(dir: &Path, args: serde_json::Value) -> ToolResult {
        GrepTool.call(args, &ToolCx::permissive(dir)).await
    }

    async fn content(dir: &Path, args: serde_json::Value) -> String {
        grep(dir, args).await.unwrap().content
    }

    const POEM: &str = "one\ntwo needle\nthree\nfour\nfive\nsix needle\nseven\n";

    #[tokio::test]
    async fn grep_respects_gitignore_and_skips_git() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[
                (".gitignore", "ignored/\nsecret.txt\n"),
                ("visible.txt", "a needle\n"),
                ("secret.txt", "a needle\n"),
                ("ignored/deep.txt", "a needle\n"),
                (".git/config", "a needle\n"),
                (".env", "a needle\n"),
            ],
        );
        let mut listed: Vec<String> = content(dir.path(), json!({"pattern": "needle"}))
            .await
            .lines()
            .map(String::from)
            .collect();
        listed.sort();
        assert_eq!(listed, [".env", "Found 2 files", "visible.txt"]);
    }

    #[tokio::test]
    async fn grep_lists_files_with_matches_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[
                ("old.rs", "needle"),
                ("src/new.rs", "needle"),
                ("mid.rs", "needle"),
                ("no.rs", "hay"),
            ],
        );
        touch(&dir.path().join("old.rs"), 1_000);
        touch(&dir.path().join("mid.rs"), 2_000);
        touch(&dir.path().join("src/new.rs"), 3_000);
        assert_eq!(
            content(dir.path(), json!({"pattern": "needle"})).await,
            "Found 3 files\nsrc/new.rs\nmid.rs\nold.rs"
        );
        assert_eq!(
            content(dir.path(), json!({"pattern": "absent"})).await,
            "No matches found"
        );
    }

    #[tokio::test]
    async fn grep_content_shows_line_numbers_and_context() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("a.txt", POEM), ("b.txt", "needle\n")]);

        let plain = content(
            dir.path(),
            json!({"pattern": "needle", "output_mode": "content"}),
        );
        assert_eq!(
            plain.await,
            "a.txt:2:two needle\na.txt:6:six needle\nb.txt:1:needle"
        );

        let around = json!({"pattern": "needle", "output_mode": "content", "-C": 1});
        assert_eq!(
            content(dir.path(), around).await,
            "a.txt-1-one\na.txt:2:two needle\na.txt-3-three\n--\na.txt-5-five\na.txt:6:six \
             needle\na.txt-7-seven\n--\nb.txt:1:needle"
        );

        let after = json!({
            "pattern": "two", "output_mode": "content", "context": 3, "after": 1, "-n": false
        });
        assert_eq!(
            content(dir.path(), after).await,
            "a.txt-one\na.txt:two needle\na.txt-three"
        );
    }

    #[tokio::test]
    async fn grep_counts_matching_lines() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[
                ("a.txt", POEM),
                ("b.txt", "needle needle\n"),
                ("c.txt", "x"),
            ],
        );
        assert_eq!(
            content(
                dir.path(),
                json!({"pattern": "needle", "output_mode": "count"})
            )
            .await,
            "a.txt:2\nb.txt:1\n\nFound 3 matching lines in 2 files"
        );
    }

    #[tokio::test]
    async fn grep_case_insensitive() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("a.txt", "NeEdLe\n")]);
        let args = |extra: serde_json::Value| {
            let mut args = json!({"pattern": "needle", "output_mode": "content"});
            args.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            args
        };
        assert_eq!(
            content(dir.path(), args(json!({}))).await,
            "No matches found"
        );
        assert_eq!(
            content(dir.path(), args(json!({"-i": true}))).await,
            "a.txt:1:NeEdLe"
        );
        let named = args(json!({"case_insensitive": true}));
        assert_eq!(content(dir.path(), named).await, "a.txt:1:NeEdLe");
    }

    #[tokio::test]
    async fn grep_filters_files_by_glob_and_type() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[
                ("a.rs", "needle"),
                ("src/b.rs", "needle"),
                ("c.py", "needle"),
                ("d.ts", "needle"),
            ],
        );
        let root = dir.path();
        let files = |args| async move {
            let mut files: Vec<String> = content(root, args)
                .await
                .lines()
                .skip(1)
                .map(String::from)
                .collect();
            files.sort();
            files
        };
        assert_eq!(
            files(json!({"pattern": "needle", "glob": "*.rs"})).await,
            ["a.rs", "src/b.rs"]
        );
        assert_eq!(
            files(json!({"pattern": "needle", "glob": "*.{py,ts}"})).await,
            ["c.py", "d.ts"]
        );
        assert_eq!(
            files(json!({"pattern": "needle", "glob": "*.py *.ts"})).await,
            ["c.py", "d.ts"]
        );
        assert_eq!(
            files(json!({"pattern": "needle", "glob": "!*.rs"})).await,
            ["c.py", "d.ts"]
        );
        assert_eq!(
            files(json!({"pattern": "needle", "type": "rust"})).await,
            ["a.rs", "src/b.rs"]
        );

        let err = grep(dir.path(), json!({"pattern": "x", "type": "nope"}))
            .await
            .unwrap_err();
        assert!(matches!(&err, ToolError::InvalidArguments(m) if m.contains("unknown file type")));
        let err = grep(dir.path(), json!({"pattern": "x", "glob": "[a"}))
            .await
            .unwrap_err();
        assert!(matches!(&err, ToolError::InvalidArguments(m) if m.contains("invalid glob")));
    }

    #[tokio::test]
    async fn grep_skips_binary_files() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("text.txt", "needle\n")]);
        std::fs::write(dir.path().join("blob.bin"), b"needle\n\x00\x01\x02needle\n").unwrap();
        assert_eq!(
            content(dir.path(), json!({"pattern": "needle"})).await,
            "Found 1 file\ntext.txt"
        );
        let count = json!({"pattern": "needle", "output_mode": "count"});
        assert_eq!(
            content(dir.path(), count).await,
            "text.txt:1\n\nFound 1 matching line in 1 file"
        );
    }

    #[tokio::test]
    async fn grep_searches_a_single_file() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("src/a.txt", POEM), ("src/b.txt", "needle")]);
        let args = json!({"pattern": "six", "path": "src/a.txt", "output_mode": "content"});
        assert_eq!(content(dir.path(), args).await, "src/a.txt:6:six needle");
        let args = json!({"pattern": "needle", "path": "./src"});
        let listed = content(dir.path(), args).await;
        assert!(
            listed.contains("src/a.txt") && listed.contains("src/b.txt"),
            "{listed}"
        );
    }

    #[tokio::test]
    async fn grep_multiline_matches_across_lines() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[("a.rs", "struct Foo {\n    x: u8,\n    bar: u8,\n}\n")],
        );
        let args = json!({
            "pattern": "struct Foo \\{.*?bar", "output_mode": "content", "multiline": true
        });
        assert_eq!(
            content(dir.path(), args).await,
            "a.rs:1:struct Foo {\na.rs:2:    x: u8,\na.rs:3:    bar: u8,"
        );
        let err = grep(dir.path(), json!({"pattern": "Foo \\{\\n"}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.contains("set `multiline: true`")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn grep_invalid_regex_is_an_argument_error_and_asks_nobody() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(DenyingGate::default());
        let cx = ToolCx {
            gate: gate.clone(),
            ..ToolCx::permissive(dir.path())
        };
        let err = GrepTool
            .call(json!({"pattern": "fn (foo"}), &cx)
            .await
            .unwrap_err();
        let ToolError::InvalidArguments(message) = err else {
            panic!("{err:?}")
        };
        assert!(
            message.starts_with("invalid regex: `fn (foo`:"),
            "{message}"
        );
        assert!(message.contains("unclosed group"), "{message}");
        assert!(gate.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn grep_cuts_output_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        let many: String = (0..1500).map(|i| format!("needle {i}\n")).collect();
        write_tree(
            dir.path(),
            &[
                ("many.txt", &many),
                ("a.txt", "needle"),
                ("b.txt", "needle"),
            ],
        );

        let out = content(
            dir.path(),
            json!({"pattern": "needle", "output_mode": "content"}),
        )
        .await;
        let (lines, notice) = out.split_once("\n\n").unwrap();
        assert_eq!(lines.lines().count(), 1000);
        assert_eq!(
            notice,
            "(Output cut after 1000 lines; more lines matched. Use a more specific pattern, \
             `path` or `glob` to see the rest.)"
        );

        let out = content(dir.path(), json!({"pattern": "needle", "head_limit": 2})).await;
        let (lines, notice) = out.split_once("\n\n").unwrap();
        assert_eq!(lines.lines().count(), 3, "a header and two files: {lines}");
        assert!(notice.starts_with("(Showing the 2 most recently modified of 3 files."));

        let wide = "needle ".repeat(400);
        let wide: String = (0..200).map(|_| format!("{wide}\n")).collect();
        write_tree(dir.path(), &[("wide.txt", &wide)]);
        let args = json!({"pattern": "needle", "output_mode": "content", "head_limit": 0});
        let out = content(dir.path(), args).await;
        assert!(out.len() < MAX_OUTPUT_BYTES + 500, "{}", out.len());
        assert!(out.contains("[… line cut at 500 characters]"));
        assert!(out.ends_with("Use a more specific pattern, `path` or `glob` to see the rest.)"));
    }

    #[tokio::test]
    async fn grep_asks_the_gate_and_stops_when_denied() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("a.txt", "needle")]);
        let gate = Arc::new(DenyingGate::default());
        let cx = ToolCx {
            gate: gate.clone(),
            ..ToolCx::permissive(dir.path())
        };
        let err = GrepTool
            .call(json!({"pattern": "needle"}), &cx)
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Denied("reading is not allowed here".into()));
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(
            *gate.asked.lock().unwrap(),
            [GateRequest::Read { path: root }]
        );
    }

    #[tokio::test]
    async fn grep_stops_when_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("a.txt", "needle")]);
        let cx = ToolCx::permissive(dir.path());
        cx.cancel.cancel();
        let err = GrepTool
            .call(json!({"pattern": "needle"}), &cx)
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Cancelled);
    }

    #[test]
    fn grep_files_reports_paths_relative_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("a/b.txt", "x\nneedle\n")]);
        let options = GrepOptions {
            mode: OutputMode::Content,
            ..GrepOptions::new("needle")
        };
        let report = grep_files(dir.path(), &options, &CancellationToken::new()).unwrap();
        assert_eq!(report.files.len(), 1);
        assert_eq!(report.files[0].path, Path::new("a/b.txt"));
        assert_eq!(
            report.files[0].lines,
            [Line::Match {
                number: Some(2),
                text: "needle".into()
            }]
        );
        assert!(!report.partial);
    }
}
