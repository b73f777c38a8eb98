"""Pure .axon declarations compiler (parser, checker, IR) and the where: filter compiler."""
