"""Small built-in data sets and seeded generators."""
