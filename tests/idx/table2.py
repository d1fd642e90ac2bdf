"""Table 2 of Rago et al. (PRICAI 2021), transcribed by hand from the paper's text.

Each row: input (w, t, p), decisions (r, o), then the relation cells
``SD -(r)/+(r)``, ``SD -(o)/+(o)``, ``CF !(r)/*(r)``, ``CF !(o)/*(o)``.
In the SD cells an upper-case letter is printed in bold in the paper, i.e. it is also in the MD set.
"""

from __future__ import annotations

ROWS = """
l l l + - | t/P      | W/t,R    | p/   | r/t
m l l + - | t/P      | /w,t,R   | p/   | /w,t,r
l m l + - | t/P      | W,T/R    | p/   | r/
m m l + - | t/P      | T/w,R    | p/   | r/w
h l l + - | t/P      | /w,t,R   | p/   | /w,t,r
l h l + - | /T,P     | W/T,R    | /t,p | /r
h m l + - | t/P      | T/w,R    | p/   | r/w
m h l + - | /T,P     | /w,T,R   | /t,p | /w,r
h h l + - | /T,P     | /w,T,R   | /t,p | /w,r
l l h - + | /t,P     | /W,t,R   | p/t  | w,r/
m l h - - | /t,P     | t,R/w    | p/t  | t/w
l m h - + | /t,P     | /W,T,R   | p/t  | r/w,t
m m h - + | /t,P     | w/T,R    | p/t  | t,r/
h l h - - | /t,P     | t,R/w    | p/t  | t/w
l h h + - | P/T      | W/T,R    | t/   | /r
h m h - + | /t,P     | w/T,R    | p/t  | t,r/
m h h + - | P/T      | /w,T,R   | t/   | /w,r
h h h + - | P/T      | /w,T,R   | t/   | /w,r
"""


def _names(cell: str) -> list[str]:
    return [s.strip() for s in cell.split(",") if s.strip()]


def _pairs(cell: str, y: str, bold_only: bool = False) -> tuple[set, set]:
    left, right = cell.split("/")
    pick = (lambda n: n.isupper()) if bold_only else (lambda n: True)
    return (
        {(n.lower(), y) for n in _names(left) if pick(n)},
        {(n.lower(), y) for n in _names(right) if pick(n)},
    )


def table2() -> list[dict]:
    """Rows of Table 2 as dicts: input, sigma, and relation sets per kit over all influences."""
    rows = []
    for line in ROWS.strip().splitlines():
        head, sd_r, sd_o, cf_r, cf_o = (part.strip() for part in line.split("|"))
        w, t, p, r, o = head.split()
        sd_att_r, sd_sup_r = _pairs(sd_r, "r")
        sd_att_o, sd_sup_o = _pairs(sd_o, "o")
        md_att_r, md_sup_r = _pairs(sd_r, "r", bold_only=True)
        md_att_o, md_sup_o = _pairs(sd_o, "o", bold_only=True)
        cf_crit_r, cf_pot_r = _pairs(cf_r, "r")
        cf_crit_o, cf_pot_o = _pairs(cf_o, "o")
        rows.append(
            {
                "input": {"w": w, "t": t, "p": p},
                "sigma": {"r": r, "o": o},
                "sd": {"attack": sd_att_r | sd_att_o, "support": sd_sup_r | sd_sup_o},
                "md": {"attack": md_att_r | md_att_o, "support": md_sup_r | md_sup_o},
                "cf": {"critical": cf_crit_r | cf_crit_o, "potential": cf_pot_r | cf_pot_o},
            }
        )
    return rows
