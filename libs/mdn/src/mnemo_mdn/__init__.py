"""Pure graph engine: corpus graph model, signed Epistemic PageRank, navigation, memory."""
