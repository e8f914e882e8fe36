//! The cockpit's view: draws a [`Model`] into a frame, nothing else (no state of its own, no
//! I/O). Wide terminals put the tree beside the detail and the log; narrow ones (under 100
//! columns) stack them. Every line is cut to its pane with an ellipsis, so 80×24 stays readable.
//!
//! ```text
//! run bar                                   (1 line)
//! tree              │ detail (+ sparkline)
//!                   │ log
//! help line: the keys that apply now        (1 line)
//! message or prompt                         (1 line)
//! ```

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline};

use crate::drive::model::{DesignPane, Model, Tone, TreeLine};
use crate::driver::advice;
use crate::model::printable::printable;

/// Below this width the panes are stacked.
const WIDE: u16 = 100;

/// Draw `model` into `frame`.
pub fn render(model: &Model, frame: &mut Frame) {
    let area = frame.area();
    let [bar, body, help, message] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let (tree, detail, log) = if area.width >= WIDE {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .spacing(1)
                .areas(body);
        let [detail, log] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(right);
        (left, detail, log)
    } else {
        let [tree, detail, log] = Layout::vertical([
            Constraint::Percentage(40),
            Constraint::Percentage(38),
            Constraint::Percentage(22),
        ])
        .areas(body);
        (tree, detail, log)
    };
    let paint = Paint(model.color());
    render_bar(model, frame, bar, paint);
    if let Some(pane) = model.design() {
        render_design(pane, frame, body, paint);
    } else {
        render_tree(model, frame, tree, paint);
        render_detail(model, frame, detail, paint);
        render_log(model, frame, log, paint);
    }
    render_help(model, frame, help, paint);
    render_message(model, frame, message, paint);
}

/// Styles, in colour or not (`NO_COLOR`: bold and reverse only).
#[derive(Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn fg(self, c: Color) -> Style {
        if self.0 {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    fn tone(self, tone: Tone) -> Style {
        match tone {
            Tone::Done => self.fg(Color::DarkGray),
            Tone::Active => self.fg(Color::Cyan),
            Tone::Human => self.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Tone::Stopped => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Tone::Waiting => Style::new(),
        }
    }

    fn dim(self) -> Style {
        self.fg(Color::DarkGray)
    }

    fn title(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
}

/// `text` cut to `width` characters, the last one `…` when cut.
pub fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// `text` in lines of at most `width` characters, broken at spaces where it can.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let (len, wlen) = (line.chars().count(), word.chars().count());
        if len > 0 && len + 1 + wlen > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > width {
            let head: String = line.chars().take(width).collect();
            line = line.chars().skip(width).collect();
            lines.push(head);
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn pane(title: &str, paint: Paint) -> Block<'_> {
    Block::new()
        .borders(Borders::TOP)
        .title(Span::styled(format!(" {title} "), paint.title()))
        .border_style(paint.dim())
}

fn render_bar(model: &Model, frame: &mut Frame, area: Rect, paint: Paint) {
    let mut parts = vec![format!(
        "drive · {}",
        model.scope().unwrap_or("whole store")
    )];
    if let (Some(s), None) = (model.state(), model.run()) {
        parts.push(format!("decision {}", s.decision.status.as_str()));
    }
    let style = match model.run() {
        Some(r) => {
            let how = if r.background { "" } else { " (watched)" };
            parts.push(format!("run {}{how} {}", r.run, r.status_text()));
            parts.push(format!("pass {}", r.passes));
            parts.push(format!("{} in flight", r.in_flight.len()));
            parts.push(format!("{} tok", r.tokens));
            parts.push(r.cost_text());
            parts.push(clock(r.wall_s));
            if r.running() {
                paint.fg(Color::Cyan)
            } else {
                Style::new()
            }
        }
        None => {
            if let Some(s) = model.state() {
                let rests = s
                    .decision
                    .nodes
                    .iter()
                    .filter_map(|(id, n)| Some((id.as_str(), n.rest.as_ref()?)));
                parts.push(advice::headline(s.decision.status, rests, |h| {
                    model.holder_alive(h)
                }));
            }
            Style::new()
        }
    };
    let text = fit(&parts.join(" · "), area.width as usize);
    let style = style.add_modifier(Modifier::REVERSED);
    frame.render_widget(
        Paragraph::new(Line::styled(
            format!("{text:<w$}", w = area.width as usize),
            style,
        )),
        area,
    );
}

fn clock(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

fn render_tree(model: &Model, frame: &mut Frame, area: Rect, paint: Paint) {
    let block = pane("tree", paint);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let height = inner.height as usize;
    if model.state().is_none() {
        frame.render_widget(Paragraph::new("reading the state…"), inner);
        return;
    }
    let cursor = model.cursor().unwrap_or(0);
    let start = (cursor + 1).saturating_sub(height);
    let width = inner.width as usize;
    let lines: Vec<Line> = model
        .tree_lines(start, height)
        .iter()
        .map(|t| tree_line(t, width, paint))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn tree_line(t: &TreeLine, width: usize, paint: Paint) -> Line<'static> {
    let mark = if t.selected { "›" } else { " " };
    let fold = match t.fold {
        Some(true) => "▸",
        Some(false) => "▾",
        None => " ",
    };
    let head = format!("{mark}{}{fold} {} {}", "  ".repeat(t.depth), t.id, t.title);
    let tail = if t.status.is_empty() {
        String::new()
    } else {
        let reason = t.reason.strip_prefix(t.status).unwrap_or(&t.reason);
        let reason = reason.trim_start_matches([':', ' ']);
        if reason.is_empty() {
            format!("  {} · {}", t.step, t.status)
        } else {
            format!("  {} · {}: {reason}", t.step, t.status)
        }
    };
    let head = fit(&head, width);
    let tail = fit(&tail, width.saturating_sub(head.chars().count()));
    let mut style = paint.tone(t.tone);
    if t.selected {
        style = style.add_modifier(Modifier::REVERSED);
    }
    Line::from(vec![
        Span::styled(head, style),
        Span::styled(tail, if t.selected { style } else { paint.dim() }),
    ])
}

fn render_detail(model: &Model, frame: &mut Frame, area: Rect, paint: Paint) {
    let block = pane("detail", paint);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(d) = model.detail() else {
        return;
    };
    let width = inner.width as usize;
    let spark = if d.scores.is_empty() || inner.height < 6 {
        0
    } else {
        2
    };
    let [text_area, spark_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(spark)]).areas(inner);
    let mut lines = vec![Line::styled(
        fit(&format!("{} {}", d.id, d.title), width),
        paint.title(),
    )];
    lines.extend(wrap(&d.next.text, width).into_iter().map(Line::raw));
    if let Some(cmd) = d.next.command.as_deref().filter(|c| *c != "splice run") {
        lines.push(Line::styled(fit(&format!("→ {cmd}"), width), paint.dim()));
    }
    for f in &d.fields {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<9}", f.label), paint.dim()),
            Span::raw(fit(&f.value, width.saturating_sub(9))),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), text_area);
    if spark > 0 {
        // Each score a few columns wide, so a short history reads as a shape.
        let each = (spark_area.width as usize / d.scores.len().max(1)).clamp(1, 4);
        let data: Vec<u64> = d
            .scores
            .iter()
            .flat_map(|&s| std::iter::repeat_n(s, each))
            .collect();
        let spark = Sparkline::default()
            .data(&data)
            .style(paint.fg(Color::Green));
        frame.render_widget(spark, spark_area);
    }
}

fn render_log(model: &Model, frame: &mut Frame, area: Rect, paint: Paint) {
    let title = match model.selected() {
        Some(id) => format!("log · {id}"),
        None => "log".into(),
    };
    let block = pane(&title, paint);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let height = inner.height as usize;
    let log = model.log();
    let skip = log.len().saturating_sub(height);
    let lines: Vec<Line> = log.skip(skip).map(|l| Line::raw(fit(l, width))).collect();
    if lines.is_empty() {
        frame.render_widget(
            Paragraph::new(Line::styled("no dispatch in flight", paint.dim())),
            inner,
        );
    } else {
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

fn render_help(model: &Model, frame: &mut Frame, area: Rect, paint: Paint) {
    let mut spans = Vec::new();
    for (key, what) in model.help_keys() {
        spans.push(Span::styled(key, paint.title()));
        spans.push(Span::styled(format!(" {what}  "), paint.dim()));
    }
    let line = Line::from(spans);
    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
    if text.chars().count() > area.width as usize {
        // Too many keys for the line: the plain text, cut.
        frame.render_widget(Paragraph::new(fit(&text, area.width as usize)), area);
    } else {
        frame.render_widget(Paragraph::new(line), area);
    }
}

/// The design pane: the conversation (its newest lines in sight) beside the plan, what the
/// agent asks for and the critic's findings. Everything the agent and the critic wrote is
/// escaped before it is drawn.
fn render_design(pane: &DesignPane, frame: &mut Frame, area: Rect, paint: Paint) {
    let [talk, side] = Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)])
        .spacing(1)
        .areas(area);
    let title = match &pane.session {
        Some(id) => format!(" design {id} ({}) ", pane.status),
        None => " design (new session) ".to_string(),
    };
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(talk);
    frame.render_widget(block, talk);
    let width = inner.width.max(1) as usize;
    let mut lines: Vec<Line> = Vec::new();
    for (person, text) in &pane.turns {
        let (who, style) = match person {
            true => ("you", paint.title()),
            false => ("agent", paint.fg(Color::Cyan)),
        };
        lines.push(Line::styled(format!("{who}:"), style));
        for para in text.lines() {
            for l in wrap(&printable(para), width.saturating_sub(2)) {
                lines.push(Line::raw(format!("  {l}")));
            }
        }
    }
    if lines.is_empty() {
        lines.push(Line::styled(
            "say what the work is: scope, constraints, how it will be checked",
            paint.dim(),
        ));
    }
    let skip = lines.len().saturating_sub(inner.height as usize);
    frame.render_widget(Paragraph::new(lines.split_off(skip)), inner);

    let block = Block::default().borders(Borders::ALL).title(" plan ");
    let inner = block.inner(side);
    frame.render_widget(block, side);
    let width = inner.width.max(1) as usize;
    let mut lines: Vec<Line> = Vec::new();
    if let Some(r) = &pane.request {
        lines.push(Line::styled(
            fit(&format!("the agent asks to {r}: /{r} does it"), width),
            paint.fg(Color::Yellow),
        ));
    }
    match &pane.plan {
        Some(p) => lines.push(Line::raw(fit(&format!("plan: {p}"), width))),
        None => lines.push(Line::styled("no plan yet: /crystallize", paint.dim())),
    }
    for f in &pane.findings {
        let style = if f.contains("MUST FIX") || f.contains("must-fix") {
            paint.fg(Color::Red)
        } else {
            Style::new()
        };
        for l in wrap(&printable(f), width) {
            lines.push(Line::styled(l, style));
        }
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

fn render_message(model: &Model, frame: &mut Frame, area: Rect, paint: Paint) {
    let width = area.width as usize;
    if let Some(pane) = model.design().filter(|_| model.prompt().is_none()) {
        let text = format!("> {}▏", pane.input);
        let skip = text.chars().count().saturating_sub(width);
        let typed = Line::styled(text.chars().skip(skip).collect::<String>(), paint.title());
        let line = match (pane.input.is_empty(), model.message()) {
            (true, Some(m)) => {
                let style = if m.starts_with("refused") {
                    paint.fg(Color::Red)
                } else {
                    Style::new()
                };
                Line::styled(fit(&format!("> ▏ {m}"), width), style)
            }
            _ => typed,
        };
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let line = match (model.prompt(), model.message()) {
        (Some(p), _) => {
            // The end of what is typed stays in sight.
            let text = format!("{}: {}▏", p.label, p.text);
            let skip = text.chars().count().saturating_sub(width);
            Line::styled(text.chars().skip(skip).collect::<String>(), paint.title())
        }
        (None, Some(m)) => {
            let style = if m.starts_with("refused") {
                paint.fg(Color::Red)
            } else {
                Style::new()
            };
            Line::styled(fit(m, width), style)
        }
        (None, None) => Line::raw(""),
    };
    frame.render_widget(Paragraph::new(line), area);
}
