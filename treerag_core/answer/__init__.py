"""Answer stage: synthesis (LLM or extractive), citations, question flags."""
