"""Ways to drive the engine from outside: training sessions, the OpenEnv server, the TRL
environment, and concurrent play against one batching backend. Nothing in the engine
imports this package."""
