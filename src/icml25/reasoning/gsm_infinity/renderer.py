"""Renders equations as sentences and problems as chat prompts (symbolic and realistic)."""

from __future__ import annotations

from icml25.reasoning.gsm_infinity.words import TEMPLATES

SYMBOLIC_INSTRUCTION = (
    "The context above lists assignments between variables. Read them as simultaneous equations: a "
    "variable can be derived only from assignments that start at a number. Question: determine which "
    "variables (if any) whose values can be derived are equal to {value}. Work through the derivations, "
    "then list the variables, and end with the sentence 'ANSWER: ' followed by the variable names "
    "separated by commas (or 'ANSWER: None')."
)

REALISTIC_PREAMBLE = (
    "Solve the problem step by step. Every quantity is a whole number. A quantity that is never mentioned "
    "does not exist (it is 0). {rules} End with 'Answer: N.' where N is the number asked for.\n\n"
    "Example. Problem: The number of adult owl in Cedar Zoo equals 2. The number of adult emu in Cedar Zoo "
    "equals 3 more than the number of adult owl in Cedar Zoo. Question: What is the total number of adult "
    "animals in Cedar Zoo? Solution: Owl in Cedar Zoo = 2. Emu in Cedar Zoo = 3 + 2 = 5. Total = 2 + 5 = 7. "
    "Answer: 7.\n\n"
)


def render_symbolic_statement(eq: dict) -> str:
    """``assign V123456 = V654321 + 1.`` for one symbolic equation."""
    op, target = eq["op"], eq["target"]
    if op == "const":
        return f"assign {target} = {eq['const']}."
    if op == "copy":
        return f"assign {target} = {eq['args'][0]}."
    sign = "+" if op == "add" else "-"
    return f"assign {target} = {eq['args'][0]} {sign} {eq['const']}."


def symbolic_prompt(statements: list[str], value: int) -> tuple[str, str]:
    """``(prompt, question)`` for a symbolic problem: the context block, then the instruction."""
    question = SYMBOLIC_INSTRUCTION.format(value=value)
    return "<context>\n" + " ".join(statements) + "\n</context>\n\n" + question, question


def phrase(key: str, template: str) -> str:
    """The noun phrase naming parameter ``key`` (``"I01|place|member"`` ...) in ``template``."""
    parts = key.split("|")
    words = TEMPLATES[template]
    if parts[0] == "I01":
        return words["i01"].format(a=parts[1], b=parts[2])
    if parts[0] == "I12":
        return words["i12"].format(b=parts[1], c=parts[2])
    if parts[0] == "A01":
        return words["a01"].format(a=parts[1])
    return words["a02"].format(a=parts[1], c=parts[2])


def render_realistic_statement(eq: dict, template: str) -> str:
    """One sentence for a realistic equation ("... equals 3 more than the sum of X and Y.")."""
    names = [phrase(arg, template) for arg in eq["args"]]
    op, const = eq["op"], eq.get("const")
    if op in ("const", "given"):
        rhs = str(const)
    elif op == "copy":
        rhs = names[0]
    elif op == "mul":
        rhs = f"{const} times {names[0]}"
    elif op == "sub":
        rhs = f"the difference between {names[0]} and {names[1]}"
    else:
        if len(names) == 1:
            body = names[0]
        elif len(names) == 2:
            body = f"the sum of {names[0]} and {names[1]}"
        else:
            body = f"the sum of {', '.join(names[:-1])} and {names[-1]}"
        rhs = f"{const} more than {body}" if const else body
    text = f"{phrase(eq['target'], template)} equals {rhs}."
    return text[0].upper() + text[1:]


def realistic_prompt(statements: list[str], query: str, template: str, few_shot: bool = True) -> tuple[str, str]:
    """``(prompt, question)``: optional short preamble, ``Problem: ... Question: ... Solution:``."""
    question = f"What is {phrase(query, template)}?"
    preamble = REALISTIC_PREAMBLE.format(rules=TEMPLATES[template]["rules"]) if few_shot else ""
    return f"{preamble}Problem: {' '.join(statements)} Question: {question} Solution:", question
