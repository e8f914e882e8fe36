//! PLACEHOLDER (i14-c2): the view is another engineer's; this stands in only so the app
//! compiles until theirs lands (the lead takes theirs at merge).

use ratatui::Frame;
use ratatui::widgets::Paragraph;

use super::model::Model;

/// Draw the model.
pub fn render(model: &Model, frame: &mut Frame) {
    let _ = model;
    frame.render_widget(Paragraph::new("splice drive"), frame.area());
}
