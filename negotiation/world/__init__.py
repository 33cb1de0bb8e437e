"""The world: entities, their records, the draws that generate them, and what changes
them between the buyer's moves (market, disruptions, rival buyers)."""
