//! What frames every view: the header, the help, the palette and the filter line, themes,
//! the status line, and drawing at any size.

use super::*;

/// #26: at 40 columns the header line, pane titles and column headings are cut, each cut
/// marked `…` (the terminal's edge and the pane's border used to cut them silently).
#[tokio::test]
async fn at_40_columns_every_cut_is_marked() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    let screen = h.render(40, 24);
    insta::assert_snapshot!("clusters_40x24", screen);
    let lines: Vec<&str> = screen.lines().collect();
    // The header (its first segment alone is wider than 40 columns), the title, the headings.
    assert!(lines[0].contains('…'), "{screen}");
    assert!(lines[3].contains("…"), "{screen}");
    // The columns not drawn at this width are named on the bottom border, not dropped silently.
    assert!(lines[21].contains(" hidden: "), "{screen}");
    h.open_prod().await;
    insta::assert_snapshot!("dashboard_1000_40x24", h.render(40, 24));
}

/// #26: the help box is as wide as its widest row, up to the terminal: on 200 columns
/// nothing in it is cut (the `:cloud` row's aliases were, at a fixed 100); where two columns
/// of it fit side by side and one does not fit the height, it takes two, and scrolls half
/// as far.
#[tokio::test]
async fn the_help_is_sized_by_its_rows_in_two_columns_when_wide() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.press(KeyCode::Char('?'));
    let rows = h.app.help_text().rows.len();
    h.render(200, 60);
    h.press(KeyCode::Char('G'));
    let screen = h.render(200, 60);
    let cloud = screen
        .lines()
        .find(|l| l.contains(":cloud "))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(cloud.contains("(also :ctx)"), "{cloud}");
    h.press(KeyCode::Char('g'));
    let screen = h.render(240, 50);
    insta::assert_snapshot!("help_240x50", screen);
    assert!(
        screen
            .lines()
            .any(|l| l.contains("│Global ") && l.contains(" Journal ")),
        "{screen}"
    );
    let (page, last) = h.app.help_page();
    // Split at the section nearest the middle: about half the lines to scroll.
    let lines = usize::from(page + last);
    assert!(
        lines < rows * 2 / 3,
        "{lines} lines of {rows} rows:\n{screen}"
    );
}

#[tokio::test]
async fn snapshot_stacks_help_palette() {
    let mut h = Harness::demo(1000);
    h.settle().await;
    h.press(KeyCode::Char(':'));
    h.type_str("st");
    snap!(h, "palette_typing");
    h.press(KeyCode::Enter);
    h.settle().await;
    snap!(h, "stacks");
    h.press(KeyCode::Char('?'));
    snap!(h, "help");
    assert!(matches!(h.app.mode(), Mode::Help(0)));
    // PgDn moves a whole page (the rows the screen shows), not a fixed 10.
    let (page, last) = h.app.help_page();
    assert!(page > 10 && last > 1, "{page} {last}");
    h.press(KeyCode::Char('j'));
    h.press(KeyCode::PageDown);
    assert!(matches!(h.app.mode(), Mode::Help(n) if *n == (page + 1).min(last)));
    snap!(h, "help_scrolled");
    // G goes to the end of the help, g back to the top; neither closes it. From the end, k
    // moves at once (the scroll stops at the last page, not far past it).
    h.press(KeyCode::Char('G'));
    assert!(matches!(h.app.mode(), Mode::Help(n) if *n == last));
    h.press(KeyCode::Char('k'));
    assert!(matches!(h.app.mode(), Mode::Help(n) if *n == last - 1));
    // Every palette command is listed, its aliases apart from what it does.
    let rows = h.app.help_text().rows;
    let names: Vec<String> = crate::message::COMMANDS
        .iter()
        .map(|c| format!(":{}", c.name))
        .collect();
    assert!(names.len() >= 20);
    for name in &names {
        assert!(
            rows.iter().any(
                |r| matches!(r, crate::state::help::HelpRow::Command { name: n, .. } if n == name)
            ),
            "{name}"
        );
    }
    h.press(KeyCode::Char('g'));
    assert!(matches!(h.app.mode(), Mode::Help(0)));
    h.press(KeyCode::Esc);
    assert!(matches!(h.app.mode(), Mode::Normal));
}

#[tokio::test]
async fn snapshot_light_and_high_contrast_render() {
    let mut h = Harness::demo(100);
    h.open_prod().await;
    h.app.update(Action::Command(crate::message::Command::Theme(
        "high-contrast".into(),
    )));
    snap!(h, "dashboard_high_contrast");
    assert_eq!(h.app.theme().name, "high-contrast");
}

#[tokio::test]
async fn palette_history_and_unknown_command() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.command("bogus");
    assert!(h
        .app
        .status()
        .as_ref()
        .unwrap()
        .text
        .contains("unknown command"));
    h.command("stacks");
    assert!(matches!(h.app.view().kind, ViewKind::Stacks));
    h.press(KeyCode::Char(':'));
    h.press(KeyCode::Up);
    let Mode::Input(input) = h.app.mode() else {
        panic!("palette open");
    };
    assert_eq!(input.text(), "stacks");
    h.press(KeyCode::Up);
    let Mode::Input(input) = h.app.mode() else {
        panic!("palette open");
    };
    assert_eq!(input.text(), "bogus");
    h.press(KeyCode::Esc);
    h.command("q");
    assert!(h.app.should_quit());
}

#[tokio::test]
async fn back_clears_filter_first_then_pops() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    assert_eq!(h.app.nav().len(), 2);
    h.press(KeyCode::Char('/'));
    h.type_str("!master");
    h.press(KeyCode::Enter);
    h.app.prepare();
    assert_eq!(h.app.view().table.len(), 2);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.nav().len(), 2);
    h.app.prepare();
    assert_eq!(h.app.view().table.len(), 3);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.nav().len(), 1);
}

/// `/` starts a fresh filter, as in less and k9s: the input opens empty (it opened holding
/// the last filter, so typing appended to it), the current filter stays applied until a new
/// one is entered, Esc keeps it, and Enter on the empty input clears it.
#[tokio::test]
async fn slash_starts_a_fresh_filter_and_keeps_the_old_until_enter() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.key(KeyAction::Open);
    h.settle().await;
    let all = {
        h.app.prepare();
        h.app.view().table.len()
    };
    let shown = |h: &mut Harness| {
        h.app.prepare();
        h.app.view().table.len()
    };
    h.press(KeyCode::Char('/'));
    h.type_str("!master");
    h.press(KeyCode::Enter);
    let filtered = shown(&mut h);
    assert!(filtered < all, "{filtered} of {all}");
    // A fresh input: nothing in it, the old filter still applied (and said in the prompt).
    h.press(KeyCode::Char('/'));
    let Mode::Input(input) = h.app.mode() else {
        panic!("the filter input is open");
    };
    assert_eq!(input.text(), "");
    assert_eq!(shown(&mut h), filtered);
    let screen = h.render(120, 30);
    assert!(screen.contains("now /!master"), "{screen}");
    // Typing shows the new one; Esc keeps the old.
    h.type_str("gpu");
    assert_ne!(shown(&mut h), filtered);
    h.press(KeyCode::Esc);
    assert_eq!(h.app.view().table.filter().raw(), "!master");
    assert_eq!(shown(&mut h), filtered);
    // A new one replaces it (not appended to it).
    h.press(KeyCode::Char('/'));
    h.type_str("gpu");
    h.press(KeyCode::Enter);
    assert_eq!(h.app.view().table.filter().raw(), "gpu");
    // Enter on the empty input clears it.
    h.press(KeyCode::Char('/'));
    h.press(KeyCode::Enter);
    assert_eq!(h.app.view().table.filter().raw(), "");
    assert_eq!(shown(&mut h), all);
}

#[tokio::test]
async fn config_problems_show_in_status_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "theme = \"dark\"\n[keys]\nquit = [\"q\"]\nzap = [\"z\"]\n",
    )
    .unwrap();
    let fake = FakeCloud::demo(10);
    let opts = ConsoleOptions {
        config_path: Some(cfg.clone()),
        theme_dir: Some(dir.path().to_path_buf()),
        ..ConsoleOptions::default()
    };
    let app = App::new(fake.info(), resolve(&opts), demo_epoch());
    let status = app.status().as_ref().unwrap().text.clone();
    assert!(
        status.contains(&format!("{}:4:", cfg.display())),
        "{status}"
    );
    assert!(status.contains("zap"), "{status}");
}

#[tokio::test]
async fn statuses_are_coloured_from_the_theme() {
    let mut h = Harness::demo(10);
    h.settle().await;
    h.app.update(Action::Resize(120, 20));
    h.app.prepare();
    let mut terminal = Terminal::new(TestBackend::new(120, 20)).unwrap();
    terminal.draw(|f| h.app.draw(f)).unwrap();
    let buf = terminal.backend().buffer().clone();
    let find = |text: &str| -> (u16, u16) {
        for y in 0..buf.area.height {
            let line: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            if let Some(x) = line.find(text) {
                return (line[..x].chars().count() as u16, y);
            }
        }
        panic!("{text} not on screen");
    };
    let (x, y) = find("CREATE_FAILED");
    assert_eq!(buf[(x, y)].fg, h.app.theme().failed);
    let (x, y) = find("UPDATE_IN_PROGRESS");
    assert_eq!(buf[(x, y)].fg, h.app.theme().in_progress);
    let (x, y) = find(" HEALTHY");
    assert_eq!(buf[(x + 1, y)].fg, h.app.theme().healthy);
    let (x, y) = find("SIMULATOR");
    assert_eq!(buf[(x, y)].bg, h.app.theme().simulator_bg);
}

#[tokio::test]
async fn every_view_draws_at_tiny_sizes_without_panicking() {
    let mut h = Harness::demo(300);
    h.settle().await;
    let sizes = [(1, 1), (10, 3), (30, 8), (45, 12)];
    let draw_all = |h: &mut Harness| {
        for (w, hh) in sizes {
            h.render(w, hh);
        }
    };
    draw_all(&mut h);
    h.key(KeyAction::Open);
    h.settle().await;
    h.app.plan_refresh(false);
    h.settle().await;
    draw_all(&mut h);
    h.key(KeyAction::Down);
    h.key(KeyAction::Open);
    h.settle().await;
    draw_all(&mut h);
    h.key(KeyAction::Tree);
    h.settle().await;
    draw_all(&mut h);
    h.key(KeyAction::Events);
    h.settle().await;
    draw_all(&mut h);
    h.key(KeyAction::Wrap);
    draw_all(&mut h);
    h.key(KeyAction::Help);
    draw_all(&mut h);
    h.press(KeyCode::Esc);
    h.press(KeyCode::Char(':'));
    draw_all(&mut h);
}

/// A service that timed out is named in the header, next to the cloud.
#[tokio::test]
async fn header_names_a_service_that_does_not_answer() {
    use crate::service::health::{Api, Availability, ServiceHealth};
    let mut h = Harness::demo(10);
    h.settle().await;
    let mut info = h.fake.info();
    info.services = vec![
        ServiceHealth {
            api: Api::Heat,
            health: Availability::Up,
            detail: None,
        },
        ServiceHealth {
            api: Api::Magnum,
            health: Availability::Slow,
            detail: Some("no answer within 10 s".into()),
        },
    ];
    h.app.update(Action::Tick {
        now: demo_epoch(),
        info: Box::new(info),
        budget: h.fake.budget(),
    });
    let screen = h.render(120, 30);
    let header = screen.lines().next().unwrap_or_default();
    assert!(header.contains("magnum: no answer within 10 s"), "{header}");
    assert!(
        !header.contains("heat ok"),
        "healthy services stay quiet: {header}"
    );
}

/// The request budget in the header: spelled out where the whole header has room, the
/// short form otherwise, and the help screen says what the short form means.
#[tokio::test]
async fn the_request_budget_explains_itself() {
    let mut h = Harness::demo(40);
    h.settle().await;
    h.app.set_budget(crate::service::BudgetStats {
        in_flight: 0,
        max_in_flight: 16,
        per_second: 0.0,
        max_per_second: 50.0,
        ..Default::default()
    });
    let header = |screen: &str| screen.lines().next().unwrap_or_default().to_string();
    let wide = header(&h.render(200, 60));
    assert!(
        wide.contains("requests 0 in flight (max 16) · 0/s (limit 50/s)"),
        "{wide}"
    );
    let narrow = header(&h.render(100, 30));
    assert!(narrow.contains("req 0/16 0/50/s"), "{narrow}");
    assert!(!narrow.contains("requests"), "{narrow}");
    h.key(KeyAction::Help);
    h.press(KeyCode::Char('G'));
    let help = h.render(200, 60);
    assert!(
        help.contains("In flight (at most 16 at once) · started in the last second (limit 50/s)"),
        "{help}"
    );
}
