//! Reusable widgets: the data table (state, sorting, filtering and drawing kept apart)
//! and the fleet heat map.

pub mod heatmap;
pub mod table;
