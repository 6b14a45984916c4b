"""A small file-based issue tracker."""
