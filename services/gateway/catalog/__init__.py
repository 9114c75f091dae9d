"""What is served: the catalog of functions, composites, fallbacks, graders and groups.

`build` assembles functions, composites, fallbacks, graders and groups into a `Catalog` with its dispatch;
`reload` swaps it at run time."""
