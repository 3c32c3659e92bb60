"""Copies the test strings of Microsoft Presidio's recognizer tests into presidio-cases.json, as data.

Usage (from a clone of https://github.com/microsoft/presidio, MIT licence):
  python3 extract-presidio.py <presidio-clone> <commit> > presidio-cases.json
Only the literal tuples of each `pytest.mark.parametrize` list are read (text, expected count,
expected spans); nothing of Presidio's code is copied or run.
"""
import ast, json, sys, subprocess

FILES = {
    'test_credit_card_recognizer.py': 'card',
    'test_email_recognizer.py': 'email',
    'test_iban_recognizer.py': 'iban',
    'test_ip_recognizer.py': 'ipAddress',
    'test_phone_recognizer.py': 'phone',
    'test_us_ssn_recognizer.py': 'ssn',
}

root, commit = sys.argv[1], sys.argv[2]
cases = []
seen = set()
for name, kind in FILES.items():
    src = subprocess.run(['git', '-C', root, 'show', f'{commit}:presidio-analyzer/tests/{name}'], capture_output=True, text=True, check=True).stdout
    for node in ast.walk(ast.parse(src)):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if not (isinstance(dec, ast.Call) and getattr(dec.func, 'attr', '') == 'parametrize'):
                continue
            fields = [f.strip() for f in ast.literal_eval(dec.args[0]).split(',')]
            if 'text' not in fields and 'iban' not in fields:
                continue
            for elt in dec.args[1].elts:
                try:
                    row = dict(zip(fields, ast.literal_eval(elt)))
                except ValueError:
                    continue  # a computed case (a checksum helper call): not literal data
                if row.get('leniency', 1) != 1:
                    continue  # Presidio's phone recognizer runs at leniency 1 unless told otherwise
                text = row.get('text', row.get('iban'))
                positions = row.get('expected_positions', row.get('expected_res', ()))
                count = row['expected_len']
                if len(positions) != count:
                    continue  # a case that gives a count but not where
                key = (text, tuple(map(tuple, positions)))
                if key in seen:
                    continue
                seen.add(key)
                cases.append({'test': f'{name}::{node.name}', 'text': text, 'spans': [[s, e, kind] for s, e in positions]})

json.dump({
    'source': 'https://github.com/microsoft/presidio (presidio-analyzer/tests/test_*_recognizer.py)',
    'commit': commit,
    'licence': 'MIT (Copyright (c) Presidio Contributors); test strings and expected spans copied as data',
    'cases': cases,
}, sys.stdout, indent=1, ensure_ascii=False)
print()
