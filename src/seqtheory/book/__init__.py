"""What the pages use: claim checks and glued numbers, plots, explorers, exercises."""
