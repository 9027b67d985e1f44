//! Controls listed with a usable name (issue 24): per application window, the interactive
//! controls a person would use, found by a pyatspi walk of the window (push/toggle buttons,
//! check/radio boxes, menus and menu items, combo boxes, entries, text fields, spin buttons,
//! list items, table cells, tree items, links, page tabs, sliders, a slide's shapes with a
//! name of their own; SHOWING and VISIBLE, on
//! screen; the cells of one row of a tree or list (a table of at most 8 columns) count
//! once), against what `ufo inspect` lists for the same window: a pyatspi control counts as
//! named when a listed control overlapping its rectangle (intersection over union ≥ 0.5)
//! carries a usable name (not empty, not its value, not U+0001, not a toolkit type name).
//! A second column also counts as covered a pyatspi control that ufo lists elsewhere in the
//! window with the same role and the same usable name: a duplicate ufo drops on purpose
//! (LibreOffice's second menu bar: the same menus are listed once), and a spreadsheet cell
//! named by its address when ufo lists its sheet as a table that says its cells are named
//! by their address (empty cells are not listed one by one; "B7" acts on that cell), and a
//! combo box whose only pyatspi name is the option it shows when ufo lists it unnamed with
//! that option as its value (a text equal to the option reaches it). With
//! `UFO_NAMES_VERBOSE=1` the pyatspi walk and every named control not covered at its place
//! are printed (marked `*` when listed elsewhere, `#` when reached by its address, `=` when
//! reached by the option it shows).
//! Also: how many controls ufo lists, and the size of that list as the model is shown it
//! (one `[label] role "name" value: …` line per control, estimated at 4 characters a token,
//! as the scripted model estimates).
//!
//! Every ufo binary to compare is run on the same open window: the one built here (or
//! `UFO_BENCH_BIN`) is "after", `UFO_NAMES_BASELINE` (a path to another build) is "before".
//! `UFO_BENCH_ONLY` (a comma-separated list of application names as printed) runs a subset.
//! An application that is not installed, or shows no window within its bound, is reported
//! as missing. Every application started is ended (by the marker argument or profile it was
//! given, and its own process), pass or fail. Needs a desktop session (`DISPLAY`) with
//! pyatspi and xdotool:
//!
//!     cargo build -p ufo && UFO_NAMES_BASELINE=/path/to/old/ufo cargo bench -p ufo --bench names
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use ufo_desktop::testing::ProcessGuard;

/// How long an application may take to show its window.
const START_BOUND: Duration = Duration::from_secs(90);
/// How long a dialog may take to open after its keys.
const DIALOG_BOUND: Duration = Duration::from_secs(20);

fn after_binary() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match std::env::var_os("UFO_BENCH_BIN") {
        Some(b) => PathBuf::from(b),
        None => root.join("target/debug/ufo"),
    }
}

/// The pyatspi walk: argv[1] a marker argument (or ""), argv[2] a process id (or 0),
/// argv[3] "dialog" to prefer a dialog window. Prints one JSON object: the window's title and
/// role, and its controls with the name a person reads and the screen rectangle.
const WALK: &str = r#"
import json, sys, pyatspi
marker, pid, want_dialog = sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'dialog'
ROLES = {pyatspi.ROLE_PUSH_BUTTON, pyatspi.ROLE_TOGGLE_BUTTON, pyatspi.ROLE_CHECK_BOX,
         pyatspi.ROLE_RADIO_BUTTON, pyatspi.ROLE_MENU, pyatspi.ROLE_MENU_ITEM,
         pyatspi.ROLE_CHECK_MENU_ITEM, pyatspi.ROLE_RADIO_MENU_ITEM, pyatspi.ROLE_COMBO_BOX,
         pyatspi.ROLE_ENTRY, pyatspi.ROLE_TEXT, pyatspi.ROLE_PASSWORD_TEXT,
         pyatspi.ROLE_SPIN_BUTTON, pyatspi.ROLE_LIST_ITEM, pyatspi.ROLE_TABLE_CELL,
         pyatspi.ROLE_TREE_ITEM, pyatspi.ROLE_LINK, pyatspi.ROLE_PAGE_TAB, pyatspi.ROLE_SLIDER}
for extra in ('ROLE_BUTTON',):
    if hasattr(pyatspi, extra): ROLES.add(getattr(pyatspi, extra))
def ours(app):
    try:
        p = app.get_process_id()
    except Exception:
        return False
    if p == pid: return True
    if not marker: return False
    try:
        args = open('/proc/%d/cmdline' % p, 'rb').read().split(b'\0')
    except Exception:
        return False
    return any(marker.encode() in a for a in args)
# GTK4 marks nothing under the window SHOWING: VISIBLE is all it says
gtk4 = False
def shown(o):
    try:
        s = o.getState()
        return (gtk4 or s.contains(pyatspi.STATE_SHOWING)) and s.contains(pyatspi.STATE_VISIBLE)
    except Exception:
        return False
def rect(o):
    try:
        e = o.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        return [e.x, e.y, e.width, e.height]
    except Exception:
        return [0, 0, 0, 0]
windows = []
for app in pyatspi.Registry.getDesktop(0):
    if app is None or not ours(app): continue
    for i in range(min(app.childCount, 50)):
        w = app[i]
        if w is None or not shown(w): continue
        r = rect(w)
        if r[2] <= 1 or r[3] <= 1: continue
        try:
            active = w.getState().contains(pyatspi.STATE_ACTIVE)
            dialog = w.getRole() in (pyatspi.ROLE_DIALOG, pyatspi.ROLE_FILE_CHOOSER, pyatspi.ROLE_ALERT)
        except Exception:
            continue
        windows.append((dialog if want_dialog else not dialog, active, r[2] * r[3], w, app.get_process_id()))
if not windows:
    print(json.dumps({'title': None, 'controls': []})); sys.exit(0)
windows.sort(key=lambda t: (t[0], t[1], t[2]), reverse=True)
windows = [windows[0]]
win = windows[0][3]
try:
    app = win.getApplication()
    gtk4 = app.toolkitName.lower() == 'gtk' and app.toolkitVersion.startswith('4')
except Exception:
    pass
labels, found = [], []
stack, seen = [win], 0
while stack and seen < 20000:
    o = stack.pop(); seen += 1
    if o is None: continue
    try:
        role = o.getRole()
    except Exception:
        continue
    if o is not win and not shown(o): continue
    if role == pyatspi.ROLE_LABEL:
        labels.append((o.name or '', rect(o)))
    # a shape of a slide with a name of its own ("Title 1") is what a person clicks into
    shape = False
    if role == pyatspi.ROLE_PANEL:
        try:
            shape = (o.parent.getRole() == pyatspi.ROLE_DOCUMENT_PRESENTATION
                     and not (o.name or '').startswith('PageShape')
                     and (o.name or '').strip() not in ('', 'PresentationTitle', 'PresentationSubtitle',
                                                        'PresentationOutliner', 'PresentationNotes', 'Text Frame'))
        except Exception:
            pass
    if role in ROLES or shape:
        r = rect(o)
        if r[2] > 1 and r[3] > 1:
            name = (o.name or '').strip()
            if not name:
                try:
                    for rel in o.getRelationSet():
                        if rel.getRelationType() == pyatspi.RELATION_LABELLED_BY:
                            for k in range(rel.getNTargets()):
                                t = rel.getTarget(k)
                                if t is not None and (t.name or '').strip():
                                    name = t.name.strip(); break
                except Exception:
                    pass
            row = None
            if role == pyatspi.ROLE_TABLE_CELL:
                try:
                    p = o.parent
                    pr = p.getRole() if p is not None else None
                    # GTK puts a row's expander, icon and text cells in a cell of the row
                    if pr == pyatspi.ROLE_TABLE_CELL:
                        p = p.parent
                        pr = p.getRole() if p is not None else None
                    # a list's table (a few columns), not a spreadsheet's
                    few = pr == pyatspi.ROLE_TABLE and 0 < p.queryTable().nColumns <= 8
                    if pr in (pyatspi.ROLE_TREE_TABLE, pyatspi.ROLE_TREE, pyatspi.ROLE_LIST) or few:
                        row = (tuple(rect(p)), r[1], r[3])
                except Exception:
                    pass
            found.append({'role': o.getRoleName(), 'name': name, 'rect': r, 'row': row})
    try:
        n = o.childCount
    except Exception:
        n = 0
    # a sheet reports a child per cell: its shown cells are the first ones asked
    for k in range(min(max(n, 0), 400)):
        try:
            stack.append(o.getChildAtIndex(k))
        except Exception:
            pass
# a control without a name of its own is read by the label just left of it on its row
for c in found:
    if c['name']: continue
    x, y, w, h = c['rect']
    best = None
    for text, (lx, ly, lw, lh) in labels:
        if not text.strip(): continue
        gap = x - (lx + lw)
        if 0 <= gap <= 200 and ly < y + h and y < ly + lh and (best is None or gap < best[0]):
            best = (gap, text.strip())
    if best: c['name'] = best[1]
# the cells of one row of a tree or list (icon, expander, text) are one control a person
# uses: the row, kept as its named cell (else its widest)
rows, kept = {}, []
for c in found:
    if c['row'] is None:
        kept.append(c); continue
    best = rows.get(c['row'])
    if best is None:
        rows[c['row']] = c; kept.append(c)
    elif (bool(c['name']), c['rect'][2]) > (bool(best['name']), best['rect'][2]):
        kept[kept.index(best)] = c; rows[c['row']] = c
found = kept
for c in found:
    del c['row']
print(json.dumps({'title': win.name, 'role': win.getRoleName(), 'pid': windows[0][4], 'controls': found}))
"#;

/// One application window of the measurement.
struct Case {
    /// the name printed in the table
    name: &'static str,
    /// the program, looked up on PATH (missing → reported missing)
    program: &'static str,
    /// its arguments; `{dir}` is this case's own temporary folder (the marker)
    args: &'static [&'static str],
    /// keys (xdotool syntax) that open the dialog to measure instead of the main window
    dialog_keys: Option<&'static str>,
    /// a file to create in `{dir}` before the start: (name, contents)
    file: Option<(&'static str, FileKind)>,
}

#[derive(Clone, Copy)]
enum FileKind {
    Text,
    Csv,
    Svg,
    Pdf,
    Zip,
    Html,
    Deck,
    Png,
}

fn cases() -> Vec<Case> {
    let office = |name, kind| Case {
        name,
        program: "soffice",
        args: kind,
        dialog_keys: None,
        file: None,
    };
    vec![
        office(
            "LibreOffice Writer",
            &["--writer", "--norestore", "--nologo", "{profile}"],
        ),
        office(
            "LibreOffice Calc",
            &["--calc", "--norestore", "--nologo", "{profile}"],
        ),
        // a deck of two slides: a new presentation opens on the template chooser
        Case {
            file: Some(("deck.fodp", FileKind::Deck)),
            ..office(
                "LibreOffice Impress",
                &["--norestore", "--nologo", "{profile}", "{dir}/deck.fodp"],
            )
        },
        office(
            "LibreOffice Draw",
            &["--draw", "--norestore", "--nologo", "{profile}"],
        ),
        Case {
            name: "Thunar",
            program: "thunar",
            args: &["{dir}"],
            dialog_keys: None,
            file: Some(("notes.txt", FileKind::Text)),
        },
        Case {
            name: "GIMP",
            program: "gimp",
            args: &["--no-splash", "--new-instance", "{dir}/picture.svg"],
            dialog_keys: None,
            file: Some(("picture.svg", FileKind::Svg)),
        },
        Case {
            name: "Firefox ESR",
            program: "firefox-esr",
            args: &["--no-remote", "--profile", "{dir}", "{dir}/form.html"],
            dialog_keys: None,
            file: Some(("form.html", FileKind::Html)),
        },
        Case {
            name: "Thunderbird",
            program: "thunderbird",
            args: &["--no-remote", "--profile", "{dir}"],
            dialog_keys: None,
            file: None,
        },
        Case {
            name: "gnome-text-editor",
            program: "gnome-text-editor",
            args: &["--standalone", "{dir}/notes.txt"],
            dialog_keys: None,
            file: Some(("notes.txt", FileKind::Text)),
        },
        Case {
            name: "Evince",
            program: "evince",
            args: &["{dir}/manual.pdf"],
            dialog_keys: None,
            file: Some(("manual.pdf", FileKind::Pdf)),
        },
        Case {
            name: "Gnumeric",
            program: "gnumeric",
            args: &["{dir}/data.csv"],
            dialog_keys: None,
            file: Some(("data.csv", FileKind::Csv)),
        },
        Case {
            name: "Gnumeric Save As",
            program: "gnumeric",
            args: &["{dir}/data.csv"],
            dialog_keys: Some("ctrl+shift+s"),
            file: Some(("data.csv", FileKind::Csv)),
        },
        Case {
            name: "Inkscape",
            program: "inkscape",
            args: &["{dir}/picture.svg"],
            dialog_keys: None,
            file: Some(("picture.svg", FileKind::Svg)),
        },
        Case {
            name: "Kate",
            program: "kate",
            args: &["--new", "{dir}/notes.txt"],
            dialog_keys: None,
            file: Some(("notes.txt", FileKind::Text)),
        },
        Case {
            name: "Okular",
            program: "okular",
            args: &["{dir}/manual.pdf"],
            dialog_keys: None,
            file: Some(("manual.pdf", FileKind::Pdf)),
        },
        Case {
            name: "KolourPaint",
            program: "kolourpaint",
            args: &["{dir}/picture.png"],
            dialog_keys: None,
            file: Some(("picture.png", FileKind::Png)),
        },
        Case {
            name: "KolourPaint Resize / Scale",
            program: "kolourpaint",
            args: &["{dir}/picture.png"],
            dialog_keys: Some("ctrl+e"),
            file: Some(("picture.png", FileKind::Png)),
        },
        Case {
            name: "KCalc",
            program: "kcalc",
            args: &[],
            dialog_keys: None,
            file: None,
        },
        Case {
            name: "File Roller",
            program: "file-roller",
            args: &["{dir}/archive.zip"],
            dialog_keys: None,
            file: Some(("archive.zip", FileKind::Zip)),
        },
        Case {
            name: "File Roller Open",
            program: "file-roller",
            args: &["{dir}/archive.zip"],
            dialog_keys: Some("ctrl+o"),
            file: Some(("archive.zip", FileKind::Zip)),
        },
        Case {
            name: "gedit",
            program: "gedit",
            args: &["--standalone", "{dir}/notes.txt"],
            dialog_keys: None,
            file: Some(("notes.txt", FileKind::Text)),
        },
        Case {
            name: "gedit Save As",
            program: "gedit",
            args: &["--standalone", "{dir}/notes.txt"],
            dialog_keys: Some("ctrl+shift+s"),
            file: Some(("notes.txt", FileKind::Text)),
        },
    ]
}

fn write_file(dir: &Path, name: &str, kind: FileKind) {
    let path = dir.join(name);
    match kind {
        FileKind::Text => std::fs::write(&path, "A short note.\nSecond line.\n").unwrap(),
        FileKind::Csv => std::fs::write(&path, "name,amount\napples,3\npears,5\n").unwrap(),
        FileKind::Svg => std::fs::write(
            &path,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"100\">\
             <rect x=\"10\" y=\"10\" width=\"80\" height=\"40\" fill=\"teal\"/></svg>",
        )
        .unwrap(),
        FileKind::Html => std::fs::write(
            &path,
            "<!doctype html><title>Order form</title><h1>Order</h1>\
             <label>Name <input name=n></label> <label><input type=checkbox> Gift wrap</label>\
             <select><option>Small<option>Large</select> <button>Send</button>\
             <p><a href=\"#more\">More details</a></p>",
        )
        .unwrap(),
        FileKind::Deck => std::fs::write(&path, DECK).unwrap(),
        FileKind::Png => {
            let file = std::fs::File::create(&path).unwrap();
            let mut enc = png::Encoder::new(std::io::BufWriter::new(file), 80, 40);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut writer = enc.write_header().unwrap();
            writer.write_image_data(&[200u8; 80 * 40 * 3]).unwrap();
        }
        FileKind::Pdf => {
            let _ = std::fs::copy(
                "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
                &path,
            )
            .or_else(|_| std::fs::copy("/usr/share/doc/fig2dev/manual.pdf", &path));
        }
        FileKind::Zip => {
            let src = dir.join("inside.txt");
            std::fs::write(&src, "inside\n").unwrap();
            let _ = Command::new("/usr/bin/python3")
                .args([
                    "-c",
                    "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], 'w'); \
                     z.write(sys.argv[2], 'inside.txt'); z.close()",
                ])
                .arg(&path)
                .arg(&src)
                .status();
        }
    }
}

/// Two slides: the first with a titled frame and an empty one named as PowerPoint names
/// its placeholders ("Title 1", "Content Placeholder 2"), the second with two placeholders.
const DECK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:body><office:presentation><draw:page draw:master-page-name="Default"><draw:frame draw:name="Title 1" svg:x="1.4cm" svg:y="0.8cm" svg:width="25cm" svg:height="3cm"><draw:text-box><text:p>Opening</text:p></draw:text-box></draw:frame><draw:frame draw:name="Content Placeholder 2" svg:x="1.4cm" svg:y="4.5cm" svg:width="25cm" svg:height="10cm"><draw:text-box><text:p/></draw:text-box></draw:frame></draw:page><draw:page draw:master-page-name="Default"><draw:frame presentation:class="title" presentation:placeholder="true" svg:x="1.4cm" svg:y="0.8cm" svg:width="25cm" svg:height="3cm"><draw:text-box/></draw:frame><draw:frame presentation:class="outline" presentation:placeholder="true" svg:x="1.4cm" svg:y="4.5cm" svg:width="25cm" svg:height="10cm"><draw:text-box/></draw:frame></draw:page></office:presentation></office:body></office:document>"#;

/// What the pyatspi walk found.
struct Walked {
    title: String,
    /// the X window id (`0x…`) of the window, when xdotool finds it, else its title
    window: String,
    controls: Vec<(String, String, [i64; 4])>,
}

fn walk(marker: &str, pid: u32, dialog: bool) -> Option<Walked> {
    let out = Command::new("timeout")
        .args([
            "60",
            "/usr/bin/python3",
            "-c",
            WALK,
            marker,
            &pid.to_string(),
        ])
        .arg(if dialog { "dialog" } else { "main" })
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    let title = v["title"].as_str()?.to_string();
    let controls = v["controls"]
        .as_array()?
        .iter()
        .map(|c| {
            let r = &c["rect"];
            let n = |i: usize| r[i].as_i64().unwrap_or(0);
            (
                c["role"].as_str().unwrap_or("").to_string(),
                c["name"].as_str().unwrap_or("").to_string(),
                [n(0), n(1), n(2), n(3)],
            )
        })
        .collect();
    let pid = v["pid"].as_u64().unwrap_or(0);
    let window = x_window(pid, &title).unwrap_or_else(|| title.clone());
    Some(Walked {
        title,
        window,
        controls,
    })
}

/// The X window of process `pid` titled `title` (the only one it shows when no title fits).
fn x_window(pid: u64, title: &str) -> Option<String> {
    let out = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--pid", &pid.to_string()])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let ids: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let named = ids.iter().find(|id| {
        Command::new("xdotool")
            .args(["getwindowname", &id.to_string()])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim_end() == title)
    });
    let id = named.or(if ids.len() == 1 { ids.first() } else { None })?;
    Some(format!("{id:#x}"))
}

/// One control as `ufo inspect` lists it.
struct Listed {
    role: String,
    name: String,
    value: Option<String>,
    rect: [i64; 4],
}

/// A Rust `{:?}` string at the start of `s`: its text and the rest after the closing quote.
fn debug_string(s: &str) -> Option<(String, &str)> {
    let mut chars = s.strip_prefix('"')?.char_indices();
    let mut text = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((text, &s[i + 2..])),
            '\\' => match chars.next()?.1 {
                'n' => text.push('\n'),
                't' => text.push('\t'),
                'r' => text.push('\r'),
                '0' => text.push('\0'),
                'u' => {
                    let hex: String = chars
                        .by_ref()
                        .map(|(_, c)| c)
                        .skip(1)
                        .take_while(|c| *c != '}')
                        .collect();
                    if let Some(c) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        text.push(c);
                    }
                }
                other => text.push(other),
            },
            c => text.push(c),
        }
    }
    None
}

/// `[3] button "OK" @10,20 80x30 value="x" [states] actions=…` → the control.
fn parse_line(line: &str) -> Option<Listed> {
    let rest = line.strip_prefix('[')?;
    let (_, rest) = rest.split_once("] ")?;
    let quote = rest.find(" \"")?;
    let role = rest[..quote].to_string();
    let (name, rest) = debug_string(&rest[quote + 1..])?;
    let rest = rest.trim_start().strip_prefix('@')?;
    let mut words = rest.splitn(3, ' ');
    let (x, y) = words.next()?.split_once(',')?;
    let (w, h) = words.next()?.split_once('x')?;
    let tail = words.next().unwrap_or("");
    let value = tail
        .strip_prefix("value=")
        .and_then(debug_string)
        .map(|(v, _)| v);
    Some(Listed {
        role,
        name,
        value,
        rect: [
            x.parse().ok()?,
            y.parse().ok()?,
            w.parse().ok()?,
            h.parse().ok()?,
        ],
    })
}

/// What one ufo binary lists for the window titled `title`.
fn inspect(bin: &Path, title: &str) -> Option<Vec<Listed>> {
    let out = Command::new("timeout")
        .arg("60")
        .arg(bin)
        .args(["inspect", title, "--png", "/dev/null"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(parse_line)
            .collect(),
    )
}

/// Whether a listed name is one a person can use: not empty, not the control's value, not
/// the placeholder character, not a toolkit's type name.
fn usable(c: &Listed) -> bool {
    let n = c.name.trim();
    let type_name = (n.starts_with("Gtk") || n.starts_with("Q") && n.len() > 1)
        && !n.contains(' ')
        && n.chars().skip(1).any(|ch| ch.is_uppercase());
    !n.is_empty() && n != "\u{1}" && c.value.as_deref().map(str::trim) != Some(n) && !type_name
}

/// Whether `name` is a cell address ("B7", "AA12").
fn is_address(name: &str) -> bool {
    let letters = name.chars().take_while(|c| c.is_ascii_uppercase()).count();
    (1..=3).contains(&letters)
        && name.len() > letters
        && name[letters..].chars().all(|c| c.is_ascii_digit())
}

/// Whether a pyatspi role name and a role ufo lists are the same role (ufo says "button"
/// for a push button).
fn same_role(atspi: &str, listed: &str) -> bool {
    atspi == listed || (atspi == "push button" && listed == "button")
}

fn overlap(a: [i64; 4], b: [i64; 4]) -> f64 {
    let x = (a[0] + a[2]).min(b[0] + b[2]) - a[0].max(b[0]);
    let y = (a[1] + a[3]).min(b[1] + b[3]) - a[1].max(b[1]);
    if x <= 0 || y <= 0 {
        return 0.0;
    }
    let inter = (x * y) as f64;
    inter / ((a[2] * a[3] + b[2] * b[3]) as f64 - inter)
}

/// The control list as the model is shown it, estimated in tokens (4 characters a token).
fn tokens(listed: &[Listed]) -> usize {
    let text: String = listed
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let value = c
                .value
                .as_ref()
                .map(|v| format!(" value: {}", Value::String(v.clone())))
                .unwrap_or_default();
            format!("  [{}] {} \"{}\"{value}\n", i + 1, c.role, c.name)
        })
        .collect();
    text.chars().count().div_ceil(4)
}

/// One binary's numbers for one window.
struct Score {
    named: usize,
    /// Of the controls pyatspi names (own name, relation or a label beside them), those ufo
    /// lists with a usable name: the issue's coverage measure.
    covered: usize,
    /// `covered`, plus the named pyatspi controls ufo lists elsewhere in the window with
    /// the same role and name (a duplicate it drops on purpose: LibreOffice's second menu
    /// bar, whose menus are listed once).
    covered_once: usize,
    /// The named pyatspi controls not covered (role, name, rectangle; `*` when listed
    /// elsewhere), for `UFO_NAMES_VERBOSE`.
    missed: Vec<String>,
    listed: usize,
    tokens: usize,
}

/// The shift between the rectangles pyatspi reads and those ufo lists, when ufo corrects
/// them (a fresh LibreOffice window reports its own drawing off by its menu bar's height):
/// the most common offset between controls of the same name and size, when at least three
/// agree.
fn shift(walked: &Walked, listed: &[Listed]) -> [i64; 2] {
    let mut votes: std::collections::HashMap<[i64; 2], usize> = Default::default();
    for (_, name, r) in &walked.controls {
        for c in listed {
            if !name.is_empty() && &c.name == name && c.rect[2] == r[2] && c.rect[3] == r[3] {
                *votes
                    .entry([c.rect[0] - r[0], c.rect[1] - r[1]])
                    .or_default() += 1;
            }
        }
    }
    votes
        .into_iter()
        .filter(|(d, n)| *n >= 3 && *d != [0, 0])
        .max_by_key(|(_, n)| *n)
        .map(|(d, _)| d)
        .unwrap_or([0, 0])
}

fn score(walked: &Walked, listed: &[Listed]) -> Score {
    let d = shift(walked, listed);
    let found = |r: &[i64; 4]| {
        let moved = [r[0] + d[0], r[1] + d[1], r[2], r[3]];
        listed
            .iter()
            .any(|c| usable(c) && (overlap(*r, c.rect) >= 0.5 || overlap(moved, c.rect) >= 0.5))
    };
    let named = walked.controls.iter().filter(|(_, _, r)| found(r)).count();
    let covered = walked
        .controls
        .iter()
        .filter(|(_, name, r)| !name.is_empty() && found(r))
        .count();
    let elsewhere = |role: &str, name: &str| {
        listed
            .iter()
            .any(|c| usable(c) && same_role(role, &c.role) && c.name.trim() == name.trim())
    };
    // a sheet listed as a table of visible cells ("cells A1:O46 visible, …", whose value
    // says to name any cell by its address; `inspect` prints only its start)
    let by_address = listed.iter().any(|c| {
        c.role == "table"
            && c.value
                .as_deref()
                .is_some_and(|v| v.starts_with("cells ") && v.contains(" visible"))
    });
    // an unnamed combo box whose only pyatspi name is the option it shows (GTK3 names a box
    // by its option): ufo lists it `combo box ""` with that option as its value, and a
    // model's text equal to the option reaches it (resolution's last reading)
    let shows_option = |r: &[i64; 4], name: &str| {
        let moved = [r[0] + d[0], r[1] + d[1], r[2], r[3]];
        listed.iter().any(|c| {
            c.role == "combo box"
                && c.name.trim().is_empty()
                && c.value.as_deref().map(str::trim) == Some(name.trim())
                && (overlap(*r, c.rect) >= 0.5 || overlap(moved, c.rect) >= 0.5)
        })
    };
    let mut covered_once = 0;
    let mut missed = Vec::new();
    for (role, name, r) in walked.controls.iter().filter(|(_, n, _)| !n.is_empty()) {
        if found(r) {
            covered_once += 1;
        } else if by_address && role == "table cell" && is_address(name) {
            covered_once += 1;
            missed.push(format!("# {role} {name:?} {r:?}"));
        } else if role == "combo box" && shows_option(r, name) {
            covered_once += 1;
            missed.push(format!("= {role} {name:?} {r:?}"));
        } else if elsewhere(role, name) {
            covered_once += 1;
            missed.push(format!("* {role} {name:?} {r:?}"));
        } else {
            missed.push(format!("  {role} {name:?} {r:?}"));
        }
    }
    Score {
        named,
        covered,
        covered_once,
        missed,
        listed: listed.len(),
        tokens: tokens(listed),
    }
}

/// Start the case's application, wait for its window (and dialog), measure it with every
/// binary, end it.
fn measure(case: &Case, bins: &[PathBuf]) -> Result<(Walked, Vec<Option<Score>>), String> {
    if ufo_proc::which(case.program, None).is_none() {
        return Err("missing (not installed)".into());
    }
    let dir = tempfile::Builder::new()
        .prefix("ufo-names-")
        .tempdir()
        .unwrap();
    let d = dir.path().display().to_string();
    let profile = format!("-env:UserInstallation=file://{d}/profile");
    if let Some((name, kind)) = case.file {
        write_file(dir.path(), name, kind);
    }
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| a.replace("{dir}", &d).replace("{profile}", &profile))
        .collect();
    let mut cmd = Command::new(case.program);
    cmd.args(&args)
        .env("HOME", dir.path().join("home"))
        .env("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1")
        .env("GTK_MODULES", "gail:atk-bridge")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if case.program == "soffice" {
        cmd.env("SAL_USE_VCLPLUGIN", "gtk3");
    }
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let child = cmd.spawn().map_err(|e| format!("missing ({e})"))?;
    let pid = child.id();
    let marker = if case.program == "soffice" {
        profile.clone()
    } else if args.is_empty() {
        String::new()
    } else {
        d.clone()
    };
    let _guard = ProcessGuard::new(
        if marker.is_empty() {
            format!("\u{1}never{pid}")
        } else {
            marker.clone()
        },
        Some(child),
    );
    let walked = settle(&marker, pid, false, START_BOUND)
        .ok_or_else(|| format!("missing (no window within {} s)", START_BOUND.as_secs()))?;
    let walked = match case.dialog_keys {
        None => walked,
        Some(keys) => {
            let _ = Command::new("timeout")
                .args(["10", "xdotool", "windowactivate", "--sync", &walked.window])
                .args(["key", "--clearmodifiers", keys])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let dialog = settle(&marker, pid, true, DIALOG_BOUND)
                .filter(|w| w.title != walked.title)
                .ok_or_else(|| format!("missing (no dialog after {keys})"))?;
            dialog
        }
    };
    let scores = bins
        .iter()
        .map(|b| inspect(b, &walked.window).map(|l| score(&walked, &l)))
        .collect();
    Ok((walked, scores))
}

/// Walk until the window's control count holds still for two walks (a window still filling
/// in is not measured half-built), within `bound`.
fn settle(marker: &str, pid: u32, dialog: bool, bound: Duration) -> Option<Walked> {
    let deadline = Instant::now() + bound;
    let mut last: Option<Walked> = None;
    while Instant::now() < deadline {
        if let Some(w) = walk(marker, pid, dialog) {
            let same = last
                .as_ref()
                .is_some_and(|l| l.title == w.title && l.controls.len() == w.controls.len());
            if same && !w.controls.is_empty() {
                return Some(w);
            }
            last = Some(w);
        }
        std::thread::sleep(Duration::from_millis(1500));
    }
    last.filter(|w| !w.controls.is_empty())
}

fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("names bench: no DISPLAY; start a session (scripts/desktop-session.sh up)");
        return;
    }
    let mut bins = Vec::new();
    let mut heads = Vec::new();
    if let Some(b) = std::env::var_os("UFO_NAMES_BASELINE") {
        bins.push(PathBuf::from(b));
        heads.push("before");
    }
    bins.push(after_binary());
    heads.push("after");
    let only: Vec<String> = std::env::var("UFO_BENCH_ONLY")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    let cell = |s: &Option<Score>, total: usize, by_atspi: usize, what: u8| match s {
        None => "inspect failed".to_string(),
        Some(s) => match what {
            0 => format!(
                "{} ({:.0}%)",
                s.named,
                100.0 * s.named as f64 / total.max(1) as f64
            ),
            3 => format!(
                "{} ({:.0}%)",
                s.covered,
                100.0 * s.covered as f64 / by_atspi.max(1) as f64
            ),
            4 => format!(
                "{} ({:.0}%)",
                s.covered_once,
                100.0 * s.covered_once as f64 / by_atspi.max(1) as f64
            ),
            1 => s.listed.to_string(),
            _ => s.tokens.to_string(),
        },
    };
    let mut header = "| window | controls (pyatspi) | named by pyatspi |".to_string();
    for h in &heads {
        header.push_str(&format!(" of those, named by ufo {h} |"));
    }
    for h in &heads {
        header.push_str(&format!(
            " of those, named by ufo, listed once or by address {h} |"
        ));
    }
    for h in &heads {
        header.push_str(&format!(" named by ufo {h} |"));
    }
    for h in &heads {
        header.push_str(&format!(" listed {h} |"));
    }
    for h in &heads {
        header.push_str(&format!(" tokens {h} |"));
    }
    println!("{header}");
    println!("|{}", "---|".repeat(3 + 5 * heads.len()));
    for case in cases() {
        if !only.is_empty() && !only.contains(&case.name.to_lowercase()) {
            continue;
        }
        match measure(&case, &bins) {
            Err(why) => println!("| {} | {why} |", case.name),
            Ok((walked, scores)) => {
                let total = walked.controls.len();
                let by_atspi = walked.controls.iter().filter(|c| !c.1.is_empty()).count();
                let mut row = format!("| {} | {total} | {by_atspi} |", case.name);
                for what in [3, 4, 0, 1, 2] {
                    for s in &scores {
                        row.push_str(&format!(" {} |", cell(s, total, by_atspi, what)));
                    }
                }
                println!("{row}");
                if std::env::var_os("UFO_NAMES_VERBOSE").is_some() {
                    eprintln!(
                        "{}: window {:?} ({})",
                        case.name, walked.title, walked.window
                    );
                    for (role, name, r) in &walked.controls {
                        eprintln!("  {role} {name:?} {r:?}");
                    }
                    for (h, s) in heads.iter().zip(&scores) {
                        let missed = s.as_ref().map(|s| s.missed.clone()).unwrap_or_default();
                        eprintln!("{}: named by pyatspi, not at their place in ufo {h} (* listed elsewhere, # by address, = by its option):", case.name);
                        for m in missed {
                            eprintln!("  {m}");
                        }
                    }
                }
            }
        }
    }
}
