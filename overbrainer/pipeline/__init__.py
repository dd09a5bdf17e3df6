"""The dataset pipeline: subtopics, questions, answers, split."""
