"""Pure functions over the model: hunk matching and application, three-way porting, diff
text, explain's search. No disk."""
