"""The patchset model and the other pure data: patchsets, diffs, requirements, RECORD rows,
paths, the matrix, start-up code. Touches nothing: no disk, no environment."""
