//! The `resim` command line.

fn main() {
    println!("resim: the scenario runner arrives with issue 6");
}
