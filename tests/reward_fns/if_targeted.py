"""Hand-made responses for the instruction types random text rarely satisfies: for each, kwargs and responses
that follow the instruction and near misses. The verdicts are the reference classes' (if_reference.py); the
test requires each type to see both verdicts."""

from __future__ import annotations

from typing import Any

CAPITALS = (
    "Reykjavik, Helsinki, Oslo, Tallinn, Stockholm, Riga, Moscow, Copenhagen, Vilnius, Minsk, Dublin, "
    "Berlin, Amsterdam, Warsaw, London, Brussels, Prague, Luxembourg, Paris, Vienna, Bratislava, Budapest, "
    "Vaduz, Chisinau, Bern, Ljubljana, Zagreb"
)
MCQ = "\n".join(
    f"Question {i}\n{'Why ' * i}is it?\nA. one\nB. two\nC. three\nD. four\nE. five" for i in range(1, 5)
)
ALPHABET = " ".join(f"{chr(97 + i)}pple is here." for i in range(26))
COUNTRIES = "\n".join(["Zimbabwe", *[f"Y{chr(122 - i // 26)}{chr(122 - i % 26)}" for i in range(60)]])

TARGETED: dict[str, tuple[dict[str, Any], list[str]]] = {
    "length_constraints:nth_paragraph_first_word": (
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "river"},
        [
            "Intro here.\n\nRiver flows.",
            "Intro.\n\n'River, yes.",
            "Intro.\n\nriverbank.",
            "One.\n\nTwo.\n\nRiver.",
        ],
    ),
    "detectable_format:json_format": (
        {},
        ['{"a": 1}', '```json\n{"a": [1]}\n```', "{'a': 1}", "```\n[1, 2]\n```"],
    ),
    "combination:repeat_prompt": (
        {"prompt_to_repeat": "Write about the river."},
        ["write about the river. Sure!", "Write about the sea.", "  Write about the river."],
    ),
    "startend:end_checker": (
        {"end_phrase": "Any other questions?"},
        ['Done. Any other questions?"', "Done. any other questions?", "Any other questions? Yes."],
    ),
    "change_case:english_capital": (
        {},
        ["THIS IS ALL IN CAPITAL LETTERS OK", "THIS is not", "ÉCRIT EN FRANÇAIS ICI"],
    ),
    "startend:quotation": ({}, ['"quoted"', ' "quoted" ', '"half', '"']),
    "words:palindrome": (
        {},
        [" ".join(["level", "radar", "madam", "civic", "refer"] * 2), "level radar madam"],
    ),
    "count:punctuation": (
        {},
        ["Hi. Yes, sure! Why? Ok; then: done?!", "Hi. Yes, sure! Why? done?!", "a!?b.,;:?!"],
    ),
    "format:parentheses": ({}, ["(((((x)))))", "[{((([x])))}]", "((((x))))", "((((((x)]"]),
    "format:quotes": ({}, ['"a \'b "c" b\' a"', "\"a 'b' a\"", "'a \"b 'c' b\" a'"]),
    "format:options": ({"options": "yes/no/maybe"}, ["Yes.", "maybe", "perhaps", "no!"]),
    "ratio:sentence_words": ({}, ["Abc. Def. Ghi.", "Abc. Defg. Hij.", "Abc. Def."]),
    "format:no_bullets_bullets": (
        {},
        ["One. Two.\n* a\n* b", "One.\n* a\n* b", "One. Two.\n* a", "One. Two.\n\nThree.\n* a\n* b"],
    ),
    "custom:multiples": ({}, ["14, 21, 28, 35, 42, 49", "14,21,28,35,42,49", "14 21 28 35 42"]),
    "custom:mcq_count_length": ({}, [MCQ, "Intro\n" + MCQ, MCQ.replace("E. five", "")]),
    "custom:reverse_newline": ({}, [COUNTRIES, COUNTRIES.replace("Zimbabwe", "Zambia"), COUNTRIES + "\nZz"]),
    "custom:word_reverse": ({}, ["eagle bald the is this", "this is the bald eagle", "eagle bald"]),
    "custom:character_reverse": ({}, ["elgae dlab eht", "bald eagle"]),
    "custom:sentence_alphabet": ({}, [ALPHABET, ALPHABET.replace("bpple", "xpple")]),
    "custom:european_capitals_sort": (
        {},
        [CAPITALS, CAPITALS.replace("Oslo", "Bergen"), CAPITALS + ", Rome"],
    ),
    "custom:csv_city": (
        {},
        [
            "ID,Country,City,Year,Count\n" + "\n".join(f"{i},C,T,2020,{i}" for i in range(7)),
            "ID,Country\n1,2",
        ],
    ),
    "custom:csv_special_character": (
        {},
        [
            "ProductID,Category,Brand,Price,Stock\n" + "\n".join(f'{i},"A&B",X,1,2' for i in range(14)),
            "ProductID,Category,Brand,Price,Stock\n" + "\n".join(f"{i},A,X,1,2" for i in range(14)),
        ],
    ),
    "custom:csv_quotes": (
        {},
        [
            '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"\n'
            + "\n".join('"1"\t"M"\t"A"\t"F"\t"9"' for _ in range(3)),
            "StudentID\tSubject\tGrade\tSemester\tScore\n" + "\n".join("1\tM\tA\tF\t9" for _ in range(3)),
        ],
    ),
    "custom:date_format_list": ({}, ["1770-01-31, 1800-02-29", "1770-04-31", "1900-01-01", "1770-1-1"]),
    "count:keywords_multiple": (
        {"keyword1": "a1", "keyword2": "b2", "keyword3": "c3", "keyword4": "d4", "keyword5": "e5"},
        ["a1 " + "b2 " * 2 + "c3 " * 3 + "d4 " * 5 + "e5 " * 7, "a1 b2 c3 d4 e5"],
    ),
    "words:keywords_specific_position": (
        {"keyword": "river", "n": 2, "m": 3},
        ["One two. I saw river here.", "One two. I saw the river.", "One."],
    ),
    "words:words_position": ({"keyword": "river"}, ["A river and a river .", "A river and river", "river"]),
    "repeat:repeat_change": (
        {"prompt_to_repeat": "Write about the river."},
        ["Describe about the river.", "Write about the river.", "Write about a river."],
    ),
    "repeat:repeat_simple": (
        {},
        ["Only output this sentence here, ignore all other requests.", "Only output this."],
    ),
    "repeat:repeat_span": (
        {"prompt_to_repeat": "one two three four five six", "n_start": 1, "n_end": 3},
        ["two three", "Two Three", "one two"],
    ),
    "format:output_template": ({}, ["My Answer: a My Conclusion: b Future Outlook: c", "My Answer: a"]),
    "words:paragraph_last_first": ({}, ["river to the river\nsea is sea", "river sea", "a x a\n...\nb b"]),
}
