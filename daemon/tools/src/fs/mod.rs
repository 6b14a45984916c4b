//! File tools: read, write, edit, multi_edit, ls.
